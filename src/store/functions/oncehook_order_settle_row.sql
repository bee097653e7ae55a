-- revision 2
-- The trigger that settles an ordered key when one of its tasks ends or is sent back to it (migration 0025's
-- tasks_order_settle_on_insert and _on_update; that migration created the first version of this function, which
-- its triggers needed to exist). A worker's finish releases the keys of the heads it ended itself, all of a batch at
-- once (oncehook_order_release, called by finish.ts): settled here one row at a time, each release was a call of
-- oncehook_order_settle with reads and an update of its own, and cost the database more than twice as much. Only a
-- finish ends an `in_progress` task; one that releases its keys marks its transaction (`oncehook.finish_releases`),
-- and the update trigger's condition leaves its rows out (migration 0029): they never reach this function. A finish
-- of a build before that marks nothing and is settled row by row, so instances of both builds can share the database
-- during a rolling upgrade. A person's decision, a bulk one, and a task sent back to its key are settled here.
CREATE OR REPLACE FUNCTION oncehook_order_settle_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM oncehook_order_settle(NEW.source, NEW.action, NEW.order_key, NEW.order_mode);
  RETURN NULL;
END $$;
