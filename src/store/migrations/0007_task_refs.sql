-- A task's keys that never change — its inserting transaction, receipt and event — move to an insert-only table,
-- and the admin lookups by page, receipt and event walk its indexes instead of three on tasks. Every claim and
-- every finish changes tasks.state, so neither is a HOT update and each wrote an entry into all three for a key
-- it did not change. Measured in the database alone (bench/sql/claim-finish.sql, 127,000 tasks): claim and
-- finish took 88–148 µs per task with those indexes, 66–77 µs without.
CREATE TABLE "task_refs" (
	"task_id" text PRIMARY KEY NOT NULL,
	"source" text NOT NULL,
	"event_id" text NOT NULL,
	"delivery_id" text NOT NULL,
	"txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL
);
--> statement-breakpoint
-- A trigger, so every insert of tasks writes the row (the ingest function, a replay, a bench) without each
-- having to. Per statement, over the rows it inserted: one insert per batch, not one call per task. Tasks are
-- never deleted (retention only drops bodies), so a row is never orphaned.
CREATE FUNCTION oncehook_record_task_refs() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO task_refs (task_id, source, event_id, delivery_id, txid)
  SELECT id, source, event_id, delivery_id, txid FROM inserted_tasks;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER tasks_record_refs AFTER INSERT ON tasks REFERENCING NEW TABLE AS inserted_tasks
FOR EACH STATEMENT EXECUTE FUNCTION oncehook_record_task_refs();
--> statement-breakpoint
-- After the trigger: creating it waited for every transaction inserting tasks and holds off new ones until this
-- migration commits, so the copy sees every task the trigger will not.
INSERT INTO task_refs (task_id, source, event_id, delivery_id, txid)
SELECT id, source, event_id, delivery_id, txid FROM tasks;
--> statement-breakpoint
DROP INDEX "tasks_page_idx";--> statement-breakpoint
DROP INDEX "tasks_delivery_idx";--> statement-breakpoint
DROP INDEX "tasks_event_idx";--> statement-breakpoint
CREATE INDEX "task_refs_page_idx" ON "task_refs" USING btree ("txid","task_id");--> statement-breakpoint
CREATE INDEX "task_refs_delivery_idx" ON "task_refs" USING btree ("delivery_id");--> statement-breakpoint
CREATE INDEX "task_refs_event_idx" ON "task_refs" USING btree ("event_id","source");
