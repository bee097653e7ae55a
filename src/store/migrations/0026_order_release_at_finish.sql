-- A worker's finish releases the keys of the heads it ended itself, all of a batch at once (oncehook_order_release,
-- called by finish.ts once those heads have ended): settled by this trigger one row at a time, each release was a
-- call of oncehook_order_settle with reads and an update of its own, and cost the database more than twice what
-- the batched release costs. Only a finish ends an `in_progress` task, so the trigger leaves that case to it; a
-- person's decision, a bulk one, and a task sent back to its key still settle here.
DROP TRIGGER "tasks_order_settle_on_update" ON "tasks";--> statement-breakpoint
CREATE TRIGGER tasks_order_settle_on_update AFTER UPDATE OF state ON tasks FOR EACH ROW
  WHEN (NEW.order_key IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state AND (
    (NOT OLD.held AND OLD.state IN ('pending', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      AND NEW.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'))
    OR (NEW.held AND OLD.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'))))
  EXECUTE FUNCTION oncehook_order_settle_row();
