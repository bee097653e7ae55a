-- A worker's finish releases the keys of the heads it ends itself, all of a batch at once (finish.ts), and marks its
-- transaction so the settle trigger leaves those rows to it. The mark was read inside the trigger's function: each
-- ended head still queued an event, had its old and new rows fetched again at the end of the statement and called a
-- function that did nothing. Read in the trigger's condition, it queues nothing, and the function no longer reads
-- it (src/store/functions). A finish of a build before the mark is still settled row by row, as is every person's
-- decision.
DROP TRIGGER tasks_order_settle_on_update ON tasks;--> statement-breakpoint
CREATE TRIGGER tasks_order_settle_on_update AFTER UPDATE OF state ON tasks FOR EACH ROW
  WHEN (NEW.order_key IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state AND (
    (NOT OLD.held AND OLD.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      AND NEW.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      AND NOT (OLD.state = 'in_progress' AND current_setting('oncehook.finish_releases', true) IS NOT DISTINCT FROM 'on'))
    OR (NEW.held AND OLD.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'))))
  EXECUTE FUNCTION oncehook_order_settle_row();
