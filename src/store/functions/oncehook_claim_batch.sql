-- revision 1
-- The forwarder's claim, one call in autocommit: lock up to max_tasks due tasks with SKIP LOCKED, decide for each
-- whether it is a send, a lookup about an unknown outcome, or a case for a person (docs/forwarding.md's rules, in
-- database time), take the lease, write where the request goes (request_origin: the action's origin for a send, the
-- lookup's for a lookup, so a destination's maxInFlight counts every instance's requests), and note the claim on the
-- task (its number, time and kind), so a crash after the claim still leaves the attempt on record: in flight until its
-- ledger row is written whole where it ends (the finish, a release, the reclaim of its lease). As a function, its SET
-- clauses hold for its own statements only: no transaction of four statements, and no round trips the worker waits
-- for between batches.
--
-- open_routes: the configured actions as [{source, action, destination, lookupDestination, keyed, keyRetentionMs,
-- lookup, maxAttempts, leaseMs, states}]. A route's `states` (default pending and outcome_unknown) name which of its
-- due tasks this claim takes: an action whose lookups go to an origin a destination limits, and whose sends do not, is
-- claimed in two parts (src/forward/routes.ts), its unknown outcomes under the lookup origin's limits, so that a lookup
-- in flight to a search API does not hold every send to the API itself.
--
-- The claim must walk tasks_due_idx in due order and stop at its limit. After a burst, before autovacuum has analysed
-- the table, the planner believes a few hundred tasks are due and prefers to fetch every due task and sort them; the
-- settings rule those plans out, and JIT, which the penalty on those plans would otherwise trigger by cost alone.
--
-- The mode is decided from the columns of the row `picked` locked: FOR UPDATE returns the newest version, where a
-- second read with the statement's snapshot would miss a change committed in between (a person's retry of an unknown
-- outcome, undone).
--
-- No lookup is asked at an origin paused or cooling: a lookup answered 429 or 503 cools its origin, 401 or 403 pauses
-- it. Only the lookups are held. An unknown outcome's claim may instead be a resend under the same key, to the
-- action's origin: held with the lookups, the task's only way to succeed while the key is kept would wait for an API
-- it never calls. So the route's numbers decide, for its candidates only, what the claim would do: by
-- oncehook_unknown_outcome_mode, the rule that also decides `due`'s mode below.
--
-- The URLs frozen on the task at ingest (request_url, lookup_url: an action whose url or lookup names its delivery)
-- come back with it: read by the worker apart, they cost a round trip a task.
--
-- Named anew when the claim stopped opening a ledger row: the earlier `oncehook_claim_tasks` returned that row's ID,
-- which its builds' finish closes. Dropped here, in the migrator's transaction, it leaves the workers of such a build
-- still running (a rolling upgrade) unable to claim at all, rather than claiming and sending what their finish can
-- no longer record: their attempts in flight end as a crash's would, by the reclaim of their leases.
DROP FUNCTION IF EXISTS oncehook_claim_tasks(text, jsonb, int);--> statement-breakpoint
CREATE OR REPLACE FUNCTION oncehook_claim_batch(worker text, open_routes jsonb, max_tasks int)
RETURNS TABLE (id text, source text, action text, "eventId" text, topic text, body bytea, "contentType" text,
  attempts int, lookups int, mode text, claim int, reason text, "priorState" text, "requestUrl" text,
  "lookupUrl" text)
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
      -- lookup: a keyed resend, which goes to the action's origin, or review once the lookups are spent. The origins
      -- are looked at once, as above; the route's numbers are read per candidate, and only for a candidate of such a
      -- route.
      AND (t.state = 'pending'
           OR NOT t.source || ':' || t.action = ANY (ARRAY(
             SELECT r.source || ':' || r.action
             FROM jsonb_to_recordset(open_routes) AS r(source text, action text, "lookupDestination" text)
             JOIN destinations d ON d.origin = r."lookupDestination"
             WHERE d.paused_at IS NOT NULL OR d.cooldown_until > now()))
           OR (SELECT bool_or(oncehook_unknown_outcome_mode(r."keyed", r."keyRetentionMs", r."lookup", r."maxAttempts",
                 t.attempts, t.lookups, t.first_attempt_at) <> 'lookup')
               FROM jsonb_to_recordset(open_routes) AS r(source text, action text, "keyed" boolean, "keyRetentionMs" bigint,
                 "lookup" boolean, "maxAttempts" int)
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
      CASE WHEN p.locked_state = 'pending' THEN 'send'
        ELSE oncehook_unknown_outcome_mode(r."keyed", r."keyRetentionMs", r."lookup", r."maxAttempts", p.locked_attempts,
          p.locked_lookups, p.locked_first_attempt_at)
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
      claims = t.claims + (due.mode <> 'review')::int,
      claimed_at = CASE WHEN due.mode = 'review' THEN t.claimed_at ELSE now() END,
      claim_kind = CASE WHEN due.mode = 'review' THEN t.claim_kind ELSE due.mode END,
      updated_at = now()
    FROM due WHERE t.id = due.id
    RETURNING t.id, t.source, t.action, t.event_id, t.topic, t.body, t.content_type, t.attempts, t.lookups,
      due.mode, t.claims, due.reason, due.prior_state, t.request_url, t.lookup_url
  )
  SELECT c.id, c.source, c.action, c.event_id, c.topic, c.body, c.content_type, c.attempts, c.lookups, c.mode,
    CASE WHEN c.mode <> 'review' THEN c.claims END, CASE WHEN c.mode = 'review' THEN c.reason END, c.prior_state,
    c.request_url, c.lookup_url
  FROM claimed c;
END
$$;
