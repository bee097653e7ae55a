ALTER TABLE "tasks" ADD COLUMN "source_body" "bytea";--> statement-breakpoint
-- Made oncehook_record_deliveries keep a shaped task's source_body.
-- The functions are in src/store/functions/ now, applied after the migrations: a database that ran this
-- migration gets the same definitions as one that did not.
