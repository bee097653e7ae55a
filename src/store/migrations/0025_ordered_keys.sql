DROP INDEX "tasks_purge_idx";--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "order_key" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "order_mode" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "order_number" double precision;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "order_text" text COLLATE "C";--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "order_by" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "order_seq" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "held" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "superseded_by" text;--> statement-breakpoint
CREATE INDEX "tasks_order_open_idx" ON "tasks" USING btree ("source","action","order_key","held","order_number","order_text","order_seq") WHERE order_key is not null and state in ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval');--> statement-breakpoint
CREATE INDEX "tasks_order_sent_idx" ON "tasks" USING btree ("source","action","order_key","order_number","order_text","order_seq") WHERE order_key is not null and first_attempt_at is not null;--> statement-breakpoint
CREATE INDEX "tasks_purge_idx" ON "tasks" USING btree ("source","updated_at","id") WHERE body is not null and state in ('succeeded', 'failed', 'cancelled', 'superseded');--> statement-breakpoint
CREATE SEQUENCE "tasks_order_seq";--> statement-breakpoint
-- An ordered action's tasks (config `order`): one task per key is unheld, its head; the others wait, `held`, with a
-- next attempt out of the claim's reach, so a claim walking tasks_due_idx never reads them. Every change that decides
-- is made under the key's advisory lock, so what the database holds decides for every worker of every instance.
-- A batch or a finish that locks many keys locks them in this lock's order first (oncehook_record_deliveries,
-- finish.ts), so two of them never wait for each other.
CREATE FUNCTION oncehook_order_lock(source text, action text, order_key text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended(source || ':' || action || ':' || order_key, 24) $$;
--> statement-breakpoint
-- Whether a comes before b: by number (a time is one), then text, each with the missing last, then by arrival: the
-- order of tasks_order_open_idx. Of scalars, not rows: an expression passing a row is planned anew at every call.
CREATE FUNCTION oncehook_order_before(a_number float8, a_text text, a_seq bigint, b_number float8, b_text text,
  b_seq bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN a_number IS DISTINCT FROM b_number THEN coalesce(a_number < b_number, a_number IS NOT NULL)
    WHEN a_text IS DISTINCT FROM b_text THEN coalesce(a_text < b_text COLLATE "C", a_text IS NOT NULL)
    ELSE a_seq < b_seq
  END
$$;
--> statement-breakpoint
-- Brings one key to rest: releases the held task that goes next when the key has no head, lets an earlier arrival
-- go before a head not yet sent (sequence), and ends as superseded what a newer task overtook before its first send
-- (latest). Idempotent, and every step reads the key again: a step may fire this function again for the same key
-- (a head superseded), and a claim may have taken the head meanwhile, which the guarded updates then leave alone.
-- It sends no notification: a finish's worker claims again when it is done, and ingest and every decision of a
-- person already notify, where a NOTIFY in each finish would serialise their commits.
CREATE FUNCTION oncehook_order_settle(k_source text, k_action text, k_key text, k_mode text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  head tasks;
  next tasks;
  sent tasks;
  unsent_head boolean;
BEGIN
  PERFORM pg_advisory_xact_lock(oncehook_order_lock(k_source, k_action, k_key));
  LOOP
    head := NULL;
    next := NULL;
    SELECT * INTO head FROM tasks t
    WHERE t.source = k_source AND t.action = k_action AND t.order_key = k_key AND NOT t.held
      AND t.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
    LIMIT 1;
    IF k_mode = 'latest' THEN
      SELECT * INTO next FROM tasks t
      WHERE t.source = k_source AND t.action = k_action AND t.order_key = k_key AND t.held
        AND t.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      ORDER BY t.order_number DESC NULLS FIRST, t.order_text DESC NULLS FIRST, t.order_seq DESC
      LIMIT 1;
    ELSE
      SELECT * INTO next FROM tasks t
      WHERE t.source = k_source AND t.action = k_action AND t.order_key = k_key AND t.held
        AND t.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      ORDER BY t.order_number, t.order_text, t.order_seq
      LIMIT 1;
    END IF;
    IF next.id IS NULL THEN
      RETURN;
    END IF;
    unsent_head := head.id IS NOT NULL AND head.state IN ('pending', 'awaiting_approval') AND head.attempts = 0
      AND head.lookups = 0;

    IF k_mode = 'latest' THEN
      -- Only the newest held task can go: the older ones never sent are overtaken by it.
      UPDATE tasks t SET state = 'superseded', superseded_by = next.id, updated_at = now()
      WHERE t.source = k_source AND t.action = k_action AND t.order_key = k_key AND t.held AND t.id <> next.id
        AND t.state IN ('pending', 'awaiting_approval') AND t.attempts = 0 AND t.lookups = 0;
      IF next.attempts = 0 AND next.lookups = 0 THEN
        SELECT * INTO sent FROM tasks t
        WHERE t.source = k_source AND t.action = k_action AND t.order_key = k_key AND t.first_attempt_at IS NOT NULL
          AND t.id <> next.id
        ORDER BY t.order_number DESC NULLS FIRST, t.order_text DESC NULLS FIRST, t.order_seq DESC
        LIMIT 1;
        IF sent.id IS NOT NULL AND NOT oncehook_order_before(sent.order_number, sent.order_text, sent.order_seq,
            next.order_number, next.order_text, next.order_seq) THEN
          UPDATE tasks t SET state = 'superseded', superseded_by = sent.id, updated_at = now() WHERE t.id = next.id;
          CONTINUE;
        END IF;
      END IF;
      IF head.id IS NOT NULL AND NOT unsent_head THEN
        RETURN;
      END IF;
      IF head.id IS NOT NULL THEN
        IF oncehook_order_before(head.order_number, head.order_text, head.order_seq,
            next.order_number, next.order_text, next.order_seq) THEN
          UPDATE tasks t SET state = 'superseded', superseded_by = next.id, updated_at = now()
          WHERE t.id = head.id AND NOT t.held AND t.state IN ('pending', 'awaiting_approval') AND t.attempts = 0
            AND t.lookups = 0;
        ELSIF next.attempts = 0 AND next.lookups = 0 THEN
          UPDATE tasks t SET state = 'superseded', superseded_by = head.id, updated_at = now() WHERE t.id = next.id;
        ELSE
          RETURN;
        END IF;
        CONTINUE;
      END IF;
    ELSIF head.id IS NOT NULL THEN
      -- An earlier arrival goes before a head not yet sent; behind one already sent, it waits its turn.
      IF NOT (unsent_head AND oncehook_order_before(next.order_number, next.order_text, next.order_seq,
          head.order_number, head.order_text, head.order_seq)) THEN
        RETURN;
      END IF;
      UPDATE tasks t SET held = true, next_attempt_at = '9999-01-01T00:00:00Z', updated_at = now()
      WHERE t.id = head.id AND NOT t.held AND t.state IN ('pending', 'awaiting_approval') AND t.attempts = 0
        AND t.lookups = 0;
      IF NOT FOUND THEN
        CONTINUE;
      END IF;
    END IF;

    UPDATE tasks t SET held = false, next_attempt_at = CASE WHEN t.state = 'pending' THEN now() ELSE t.next_attempt_at END,
      updated_at = now()
    WHERE t.id = next.id AND t.held;
    RETURN;
  END LOOP;
END $$;
--> statement-breakpoint
-- A new ordered task that meets its key busy, and one a person sends back (a retry of a failed one), waits held
-- until its key is settled; a held task stays out of the claim's reach whatever sets its next attempt (an
-- approval); one that ends, held or not, holds nothing.
CREATE FUNCTION oncehook_order_hold() RETURNS trigger
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
          AND s.first_attempt_at IS NOT NULL
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
--> statement-breakpoint
CREATE FUNCTION oncehook_order_settle_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM oncehook_order_settle(NEW.source, NEW.action, NEW.order_key, NEW.order_mode);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tasks_order_hold_on_insert BEFORE INSERT ON tasks FOR EACH ROW
  WHEN (NEW.order_key IS NOT NULL)
  EXECUTE FUNCTION oncehook_order_hold();
--> statement-breakpoint
-- Only where it changes something: a held task, or one sent back to its key (a retry). A claim or a finish of a
-- head, the common case, moves within or out of the unresolved states with `held` false, and calls nothing.
CREATE TRIGGER tasks_order_hold_on_update BEFORE UPDATE ON tasks FOR EACH ROW
  WHEN (NEW.order_key IS NOT NULL AND (NEW.held OR (
    OLD.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
    AND NEW.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'))))
  EXECUTE FUNCTION oncehook_order_hold();
--> statement-breakpoint
CREATE TRIGGER tasks_order_settle_on_insert AFTER INSERT ON tasks FOR EACH ROW
  WHEN (NEW.order_key IS NOT NULL AND NEW.held)
  EXECUTE FUNCTION oncehook_order_settle_row();
--> statement-breakpoint
-- A head that ends releases its key; a task a person sends back is placed in it.
CREATE TRIGGER tasks_order_settle_on_update AFTER UPDATE OF state ON tasks FOR EACH ROW
  WHEN (NEW.order_key IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state AND (
    (NOT OLD.held AND OLD.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      AND NEW.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'))
    OR (NEW.held AND OLD.state NOT IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval'))))
  EXECUTE FUNCTION oncehook_order_settle_row();
