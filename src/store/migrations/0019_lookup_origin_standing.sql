-- oncehook_claim_tasks (migration 0015) again: a lookup answered 429 or 503 cools its origin, 401 or 403 pauses it
-- (src/forward/decide.ts), and the claim asks no lookup at an origin paused or cooling. Until now only the action's
-- own origin was looked at, so a rate-limited lookup API was asked again after each 429 (each spending one of the
-- task's lookups), and one refusing oncehook's credentials again and again.
-- Only the lookups are held. An unknown outcome's claim may instead be a resend under the same key, to the action's
-- origin: holding every unknown outcome of the route would have been one more origin in the open routes' filter,
-- but a resend, and with it the task's only way to succeed while the key is kept, would then wait for an API it
-- never calls, and a key retention shorter than the lookup's pause would turn a resend into a lookup or a review.
-- So the route's numbers decide, for its candidates only, what the claim would do. Same signature; `due` unchanged.
CREATE OR REPLACE FUNCTION oncehook_claim_tasks(worker text, open_routes jsonb, max_tasks int)
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
    -- FOR UPDATE returns the version it locked, so these columns are the ones the decision below must see.
    SELECT t.id, t.source, t.action, t.state AS locked_state, t.attempts AS locked_attempts,
      t.lookups AS locked_lookups, t.first_attempt_at AS locked_first_attempt_at
    FROM tasks t
    WHERE t.state IN ('pending', 'outcome_unknown')
      AND t.next_attempt_at <= now()
      -- The open routes, computed once (an uncorrelated subquery) and tested as a plain filter, so the planner
      -- walks tasks_due_idx. As a join or an EXISTS it scanned and sorted every task of a source on every
      -- claim. Source and action IDs cannot contain ":" (the config schema's patterns).
      -- A route's `states` (default both) name which of its tasks this claim takes.
      AND t.state || ':' || t.source || ':' || t.action = ANY (ARRAY(
        SELECT s.state || ':' || r.source || ':' || r.action
        FROM jsonb_to_recordset(open_routes) AS r(source text, action text, destination text, states text[])
        CROSS JOIN unnest(coalesce(r.states, ARRAY['pending', 'outcome_unknown'])) AS s(state)
        LEFT JOIN destinations d ON d.origin = r.destination
        WHERE d.paused_at IS NULL AND coalesce(d.cooldown_until, '-infinity') <= now()))
      -- An unknown outcome whose route's lookup origin is paused or cooling is taken only when its claim asks no
      -- lookup: a keyed resend, which goes to the action's origin, or review once the lookups are spent (the
      -- negation of the `due` CASE below). The origins are looked at once, as above; the route's numbers are read
      -- per candidate, and only for a candidate of such a route.
      AND (t.state = 'pending'
           OR NOT t.source || ':' || t.action = ANY (ARRAY(
             SELECT r.source || ':' || r.action
             FROM jsonb_to_recordset(open_routes) AS r(source text, action text, "lookupDestination" text)
             JOIN destinations d ON d.origin = r."lookupDestination"
             WHERE d.paused_at IS NOT NULL OR d.cooldown_until > now()))
           OR (SELECT bool_or((r."keyed" AND t.attempts < r."maxAttempts"
                 AND t.first_attempt_at > now() - r."keyRetentionMs" * interval '1 millisecond')
                 OR t.lookups >= r."maxAttempts")
               FROM jsonb_to_recordset(open_routes) AS r(source text, action text, "keyed" boolean, "keyRetentionMs" bigint, "maxAttempts" int)
               WHERE r.source = t.source AND r.action = t.action))
      -- A scalar lookup by primary key per candidate; an EXISTS here is planned as a hash of every succeeded task.
      AND (t.state = 'outcome_unknown' OR t.after_task_id IS NULL
           OR (SELECT s.state FROM tasks s WHERE s.id = t.after_task_id) = 'succeeded')
    ORDER BY t.next_attempt_at
    LIMIT max_tasks
    FOR UPDATE OF t SKIP LOCKED
  ),
  due AS (
    SELECT p.id, p.locked_state AS prior_state, r."leaseMs" AS lease_ms, r.destination, r."lookupDestination" AS lookup_destination,
      CASE
        WHEN p.locked_state = 'pending' THEN 'send'
        WHEN r."keyed" AND p.locked_attempts < r."maxAttempts"
          AND p.locked_first_attempt_at > now() - r."keyRetentionMs" * interval '1 millisecond' THEN 'send'
        WHEN r."lookup" AND p.locked_lookups < r."maxAttempts" THEN 'lookup'
        ELSE 'review'
      END AS mode,
      CASE
        WHEN r."lookup" THEN 'outcome unknown: the lookup answered neither yes nor no, ' || p.locked_lookups || ' times'
        WHEN r."keyed" AND p.locked_attempts >= r."maxAttempts" THEN 'outcome unknown after the last allowed attempt, and the action has no lookup'
        WHEN r."keyed" THEN 'outcome unknown: the first attempt is older than the downstream keeps idempotency keys, and the action has no lookup'
        ELSE 'outcome unknown: the action honours no idempotency key and has no lookup'
      END AS reason
    FROM picked p
    JOIN jsonb_to_recordset(open_routes) AS r(source text, action text, "keyed" boolean, "keyRetentionMs" bigint,
      "lookup" boolean, "maxAttempts" int, "leaseMs" bigint, destination text, "lookupDestination" text, states text[])
      ON r.source = p.source AND r.action = p.action
        AND p.locked_state = ANY (coalesce(r.states, ARRAY['pending', 'outcome_unknown']))
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
      request_origin = CASE due.mode WHEN 'send' THEN due.destination WHEN 'lookup' THEN due.lookup_destination END,
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
