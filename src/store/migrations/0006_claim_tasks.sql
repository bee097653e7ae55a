-- The forwarder's claim (claimTasks in src/store/atomic.ts) as one call in autocommit. It ran as a transaction
-- of four statements — BEGIN, the planner settings below, the claim, COMMIT — four round trips for every
-- batch of tasks, and the worker claims one batch at a time: each round trip was time no task was claimed.
-- A function's SET clauses hold for its own statements only, so the settings need no transaction of their own.
--
-- The claim must walk tasks_due_idx in due order and stop at its limit. After a burst, before autovacuum has
-- analysed the table, the planner believes a few hundred tasks are due and prefers to fetch every due task and
-- sort them (measured: 30 ms per claim at a backlog of 15,000, against 1 ms for the index walk). The settings
-- rule those plans out, and JIT, which the penalty on those plans would otherwise trigger by cost alone.
--
-- What it does, in one statement: lock up to max_tasks due tasks with SKIP LOCKED, decide for each whether it
-- is a send, a lookup about an unknown outcome, or a case for a person (docs/forwarding.md's rules, in database
-- time), take the lease, and open the ledger row, so a crash after the claim still leaves the attempt on
-- record. open_routes: the configured actions as [{source, action, destination, keyed, keyRetentionMs, lookup,
-- maxAttempts, leaseMs}].
CREATE FUNCTION oncehook_claim_tasks(worker text, open_routes jsonb, max_tasks int)
RETURNS TABLE (id text, source text, action text, "eventId" text, topic text, body bytea, "contentType" text,
  attempts int, lookups int, mode text, "attemptId" int, reason text, "priorState" text)
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
SET enable_sort = off
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH picked AS (
    SELECT t.id
    FROM tasks t
    WHERE t.state IN ('pending', 'outcome_unknown')
      AND t.next_attempt_at <= now()
      -- The open routes, computed once (an uncorrelated subquery) and tested as a plain filter, so the planner
      -- walks tasks_due_idx. As a join or an EXISTS it scanned and sorted every task of a source on every
      -- claim. Source and action IDs cannot contain ":" (the config schema's patterns).
      AND t.source || ':' || t.action = ANY (ARRAY(
        SELECT r.source || ':' || r.action
        FROM jsonb_to_recordset(open_routes) AS r(source text, action text, destination text)
        LEFT JOIN destinations d ON d.origin = r.destination
        WHERE d.paused_at IS NULL AND coalesce(d.cooldown_until, '-infinity') <= now()))
      -- A scalar lookup by primary key per candidate; an EXISTS here is planned as a hash of every succeeded task.
      AND (t.state = 'outcome_unknown' OR t.after_task_id IS NULL
           OR (SELECT s.state FROM tasks s WHERE s.id = t.after_task_id) = 'succeeded')
    ORDER BY t.next_attempt_at
    LIMIT max_tasks
    FOR UPDATE OF t SKIP LOCKED
  ),
  due AS (
    SELECT t.id, t.state AS prior_state, r."leaseMs" AS lease_ms,
      CASE
        WHEN t.state = 'pending' THEN 'send'
        WHEN r."keyed" AND t.attempts < r."maxAttempts"
          AND t.first_attempt_at > now() - r."keyRetentionMs" * interval '1 millisecond' THEN 'send'
        WHEN r."lookup" AND t.lookups < r."maxAttempts" THEN 'lookup'
        ELSE 'review'
      END AS mode,
      CASE
        WHEN r."lookup" THEN 'outcome unknown: the lookup answered neither yes nor no, ' || t.lookups || ' times'
        WHEN r."keyed" AND t.attempts >= r."maxAttempts" THEN 'outcome unknown after the last allowed attempt, and the action has no lookup'
        WHEN r."keyed" THEN 'outcome unknown: the first attempt is older than the downstream keeps idempotency keys, and the action has no lookup'
        ELSE 'outcome unknown: the action honours no idempotency key and has no lookup'
      END AS reason
    FROM picked p
    JOIN tasks t ON t.id = p.id
    JOIN jsonb_to_recordset(open_routes) AS r(source text, action text, "keyed" boolean, "keyRetentionMs" bigint,
      "lookup" boolean, "maxAttempts" int, "leaseMs" bigint) ON r.source = t.source AND r.action = t.action
  ),
  claimed AS (
    UPDATE tasks t SET
      state = CASE WHEN due.mode = 'review' THEN 'needs_review' ELSE 'in_progress' END,
      attempts = t.attempts + (due.mode = 'send')::int,
      lookups = t.lookups + (due.mode = 'lookup')::int,
      first_attempt_at = CASE WHEN due.mode = 'send' THEN coalesce(t.first_attempt_at, now()) ELSE t.first_attempt_at END,
      lease_owner = CASE WHEN due.mode = 'review' THEN NULL ELSE worker END,
      lease_expires_at = CASE WHEN due.mode = 'review' THEN NULL ELSE now() + due.lease_ms * interval '1 millisecond' END,
      last_error = CASE WHEN due.mode = 'review' THEN due.reason ELSE t.last_error END,
      updated_at = now()
    FROM due WHERE t.id = due.id
    RETURNING t.id, t.source, t.action, t.event_id, t.topic, t.body, t.content_type, t.attempts, t.lookups,
      due.mode, due.reason, due.prior_state
  ),
  ledger AS (
    INSERT INTO attempts (task_id, number, kind)
    SELECT c.id, c.attempts, c.mode FROM claimed c WHERE c.mode <> 'review'
    RETURNING attempts.id, attempts.task_id
  )
  SELECT c.id, c.source, c.action, c.event_id, c.topic, c.body, c.content_type, c.attempts, c.lookups, c.mode,
    l.id::int, CASE WHEN c.mode = 'review' THEN c.reason END, c.prior_state
  FROM claimed c LEFT JOIN ledger l ON l.task_id = c.id;
END
$$;
