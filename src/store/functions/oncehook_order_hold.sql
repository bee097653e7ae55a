-- revision 1
-- Migration 0025 made this trigger function's first version, with its triggers. Here since the newest position sent
-- is looked for among the key's tasks in mode `latest` only: tasks_order_latest_sent_idx (0026) holds no other.
-- A new ordered task that meets its key busy, and one a person sends back (a retry of a failed one), waits held
-- until its key is settled; a held task stays out of the claim's reach whatever sets its next attempt (an
-- approval); one that ends, held or not, holds nothing.
CREATE OR REPLACE FUNCTION oncehook_order_hold() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  unresolved boolean := NEW.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval');
  sent tasks;
BEGIN
  -- A task placed by a retry (its transform failed, so it had no order then) arrives at its key now.
  NEW.order_seq := coalesce(NEW.order_seq, nextval('tasks_order_seq'));
  IF TG_OP = 'INSERT' THEN
    -- A key with nothing unresolved (and, for latest, nothing sent at or past this position) takes the task as its
    -- head at once, with no settling after: the common case of a key without a backlog costs the lock and a look.
    -- Only NEW is changed here: an insert that meets a conflict then leaves nothing else changed.
    NEW.held := unresolved;
    IF unresolved THEN
      PERFORM pg_advisory_xact_lock(oncehook_order_lock(NEW.source, NEW.action, NEW.order_key));
      NEW.held := EXISTS (
        SELECT 1 FROM tasks t
        WHERE t.source = NEW.source AND t.action = NEW.action AND t.order_key = NEW.order_key
          AND t.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'));
      -- Apart, not in one expression with the look above: a statement that passes NEW whole is planned anew each time.
      IF NOT NEW.held AND NEW.order_mode = 'latest' THEN
        SELECT * INTO sent FROM tasks s
        WHERE s.source = NEW.source AND s.action = NEW.action AND s.order_key = NEW.order_key
          AND s.order_mode = 'latest' AND s.first_attempt_at IS NOT NULL
        ORDER BY s.order_number DESC NULLS FIRST, s.order_text DESC NULLS FIRST, s.order_seq DESC
        LIMIT 1;
        NEW.held := sent.id IS NOT NULL AND NOT oncehook_order_before(sent.order_number, sent.order_text, sent.order_seq,
          NEW.order_number, NEW.order_text, NEW.order_seq);
      END IF;
    END IF;
  ELSIF NOT unresolved THEN
    NEW.held := false;
  ELSIF OLD.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval') THEN
    NEW.held := true;
  END IF;
  IF NEW.held AND NEW.state = 'pending' THEN
    NEW.next_attempt_at := '9999-01-01T00:00:00Z';
  END IF;
  RETURN NEW;
END $$;
