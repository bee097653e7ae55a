-- revision 1
-- Migration 0025 made this function's first version, which its triggers needed. Here since the newest position sent is
-- looked for among the key's tasks in mode `latest` only: tasks_order_latest_sent_idx (0026) holds no other.
-- Brings one key to rest: releases the held task that goes next when the key has no head, lets an earlier arrival
-- go before a head not yet sent (sequence), and ends as superseded what a newer task overtook before its first send
-- (latest). Idempotent, and every step reads the key again: a step may fire this function again for the same key
-- (a head superseded), and a claim may have taken the head meanwhile, which the guarded updates then leave alone.
-- It sends no notification: a finish's worker claims again when it is done, and ingest and every decision of a
-- person already notify, where a NOTIFY in each finish would serialise their commits.
CREATE OR REPLACE FUNCTION oncehook_order_settle(k_source text, k_action text, k_key text, k_mode text) RETURNS void
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
        WHERE t.source = k_source AND t.action = k_action AND t.order_key = k_key AND t.order_mode = 'latest'
          AND t.first_attempt_at IS NOT NULL AND t.id <> next.id
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
