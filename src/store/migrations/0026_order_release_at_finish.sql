-- A worker's finish releases the keys of the heads it ended itself, all of a batch at once (oncehook_order_release,
-- called by finish.ts once those heads have ended): settled by the trigger one row at a time, each release was a
-- call of oncehook_order_settle with reads and an update of its own, and cost the database more than twice what
-- the batched release costs. Only a finish ends an `in_progress` task. A finish that releases its keys marks its
-- transaction (`oncehook.finish_releases`), and the trigger leaves it those rows; a finish of a build before this
-- one marks nothing, and is settled row by row as before, so instances of both builds can share the database
-- during a rolling upgrade. A person's decision, a bulk one, and a task sent back to its key still settle here.
CREATE OR REPLACE FUNCTION oncehook_order_settle_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.state = 'in_progress' AND current_setting('oncehook.finish_releases', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM oncehook_order_settle(NEW.source, NEW.action, NEW.order_key, NEW.order_mode);
  RETURN NULL;
END $$;
