CREATE TABLE "destination_budgets" (
	"origin" text PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"refilled_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "skipped" jsonb;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "transform_error" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "request_origin" text;--> statement-breakpoint
-- oncehook_record_deliveries (migration 0004) again, for actions that call real APIs. A planned task may carry
-- its own body, content type and hash: what its action's transform made of the delivery, computed before the
-- transaction and stored here, so every attempt and every approval is of exactly those bytes. A task whose
-- transform failed is inserted failed, with the delivery's own bytes kept for a retry and a ledger row saying why.
-- A receipt carries the actions that made no task of it (a topic or a filter that did not match), kept on its
-- row for the operator's "why no task". Same stages, same decisions, same answer otherwise.
CREATE OR REPLACE FUNCTION oncehook_record_deliveries(batch json, channel text) RETURNS json
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  b jsonb := batch::jsonb;
  -- Sets of receipt IDs: {receipt: true}.
  passed_delivery jsonb;
  passed_event jsonb;
  repeats jsonb;
  -- {receipt: {task ID: {id, action, state}}}: the tasks each receipt created.
  created jsonb;
  answer json;
BEGIN
  -- 1. Delivery keys: the first receipt of each key in the batch claims it; receipts whose claim was new pass.
  WITH r AS (
    SELECT * FROM jsonb_to_recordset(b) AS r(i int, id text, source text, delivery_id text)
  ), leaders AS (
    SELECT DISTINCT ON (source, delivery_id) source, delivery_id, id FROM r ORDER BY source, delivery_id, i
  ), claimed AS (
    INSERT INTO delivery_keys (source, delivery_id, first_delivery)
    SELECT source, delivery_id, id FROM leaders ORDER BY source COLLATE "C", delivery_id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING first_delivery
  )
  SELECT coalesce(jsonb_object_agg(first_delivery, true), '{}') INTO passed_delivery FROM claimed;

  -- Every other receipt repeats a delivery; the key names the receipt that first carried it.
  SELECT coalesce(jsonb_object_agg(r.id, jsonb_build_object('decision', 'duplicate_delivery', 'first',
      (SELECT k.first_delivery FROM delivery_keys k WHERE k.source = r.source AND k.delivery_id = r.delivery_id))), '{}')
  INTO repeats
  FROM jsonb_to_recordset(b) AS r(id text, source text, delivery_id text)
  WHERE NOT passed_delivery ? r.id;

  -- 2. Event keys, for the receipts that passed the delivery stage.
  WITH r AS (
    SELECT * FROM jsonb_to_recordset(b) AS r(i int, id text, source text, event_id text)
    WHERE passed_delivery ? r.id
  ), leaders AS (
    SELECT DISTINCT ON (source, event_id) source, event_id, id FROM r ORDER BY source, event_id, i
  ), claimed AS (
    INSERT INTO event_keys (source, event_id, first_delivery)
    SELECT source, event_id, id FROM leaders ORDER BY source COLLATE "C", event_id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING first_delivery
  )
  SELECT coalesce(jsonb_object_agg(first_delivery, true), '{}') INTO passed_event FROM claimed;

  SELECT repeats || coalesce(jsonb_object_agg(r.id, jsonb_build_object('decision', 'duplicate_event', 'first',
      (SELECT k.first_delivery FROM event_keys k WHERE k.source = r.source AND k.event_id = r.event_id))), '{}')
  INTO repeats
  FROM jsonb_to_recordset(b) AS r(id text, source text, event_id text)
  WHERE passed_delivery ? r.id AND NOT passed_event ? r.id;

  -- 3. Tasks of the receipts that carried a new event; a task named twice belongs to the first receipt.
  -- A task's own body, content type and hash are what its action's transform made; without one, the receipt's.
  WITH named AS (
    SELECT r.i, r.id AS receipt, r.source, r.event_id, r.topic,
      CASE WHEN t.body IS NULL THEN r.content_type ELSE t.content_type END AS content_type,
      coalesce(t.body, r.body) AS body, coalesce(t.body_sha256, r.body_sha256) AS body_sha256,
      t.id, t.action, t.state, t.after_task_id, t.transform_error
    FROM jsonb_to_recordset(b) AS r(i int, id text, source text, event_id text, topic text, content_type text,
      body text, body_sha256 text, tasks jsonb)
    CROSS JOIN jsonb_to_recordset(r.tasks) AS t(id text, action text, state text, after_task_id text, body text,
      content_type text, body_sha256 text, transform_error text)
    WHERE passed_event ? r.id
  ), owned AS (
    SELECT DISTINCT ON (id) * FROM named ORDER BY id, i
  ), inserted AS (
    INSERT INTO tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256,
      after_task_id, transform_error, last_error)
    SELECT id, source, action, event_id, topic, receipt, state, decode(body, 'base64'), content_type, body_sha256,
      after_task_id, transform_error, 'the transform failed: ' || transform_error
    FROM owned ORDER BY id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING id, action, state, delivery_id, transform_error
  ), transform_ledger AS (
    -- A task whose transform failed has nothing to send: its ledger says so, in the transaction that made it.
    INSERT INTO attempts (task_id, number, kind, finished_at, class, error, decision)
    SELECT id, 0, 'transform', now(), 'transform_failed', transform_error,
      'failed: the transform made no body, and nothing was sent; fix the action''s transform, then retry'
    FROM inserted WHERE transform_error IS NOT NULL
    ORDER BY id COLLATE "C"
  )
  SELECT coalesce(jsonb_object_agg(receipt, by_id), '{}') INTO created
  FROM (
    SELECT delivery_id AS receipt, jsonb_object_agg(id, jsonb_build_object('id', id, 'action', action, 'state', state)) AS by_id
    FROM inserted GROUP BY delivery_id
  ) per_receipt;

  -- A receipt with tasks that created none of them repeats the task work of the receipt that created its first.
  SELECT repeats || coalesce(jsonb_object_agg(r.id, jsonb_build_object('decision', 'duplicate_task',
      'first', (SELECT s.delivery_id FROM tasks s WHERE s.id = r.tasks -> 0 ->> 'id'))), '{}')
  INTO repeats
  FROM jsonb_to_recordset(b) AS r(id text, tasks jsonb)
  WHERE passed_event ? r.id AND jsonb_array_length(r.tasks) > 0 AND NOT created ? r.id;

  -- 4. Every receipt, with its decision; the forwarder's wake-up commits with the tasks.
  INSERT INTO deliveries (id, source, delivery_id, event_id, topic, occurred_at, decision, matched_delivery_id,
    headers, content_type, body_sha256, body_bytes, skipped)
  SELECT r.id, r.source, r.delivery_id, r.event_id, r.topic, r.occurred_at,
    coalesce(repeats -> r.id ->> 'decision', 'accepted'), repeats -> r.id ->> 'first',
    r.headers, r.content_type, r.body_sha256, r.body_bytes, r.skipped
  FROM jsonb_to_recordset(b) AS r(i int, id text, source text, delivery_id text, event_id text, topic text,
    occurred_at timestamptz, headers jsonb, content_type text, body_sha256 text, body_bytes int, skipped jsonb)
  ORDER BY r.i;
  IF created <> '{}' THEN
    PERFORM pg_notify(channel, '');
  END IF;

  -- 5. The answer: each decision with the record it matched and the tasks it names, in the receipt's order.
  SELECT json_agg(json_build_object(
      'decision', coalesce(repeats -> r.id ->> 'decision', 'accepted'),
      'receivedMs', extract(epoch FROM now()) * 1000,
      'first', (
        SELECT json_build_object('id', d.id, 'deliveryId', d.delivery_id, 'eventId', d.event_id,
          'receivedMs', extract(epoch FROM d.received_at) * 1000, 'decision', d.decision)
        FROM deliveries d WHERE d.id = repeats -> r.id ->> 'first'),
      'created', (
        SELECT coalesce(json_agg(created -> r.id -> (x.task ->> 'id') ORDER BY x.n), '[]')
        FROM jsonb_array_elements(r.tasks) WITH ORDINALITY AS x(task, n)
        WHERE created -> r.id ? (x.task ->> 'id')),
      -- A scalar subquery per task, not a join: a join is planned for a hundred rows per set-returning
      -- function and hashes the whole tasks table.
      'existing', (
        SELECT coalesce(json_agg(e.summary ORDER BY e.n) FILTER (WHERE e.summary IS NOT NULL), '[]')
        FROM (
          SELECT x.n, (
            SELECT json_build_object('id', s.id, 'action', s.action, 'state', s.state) FROM tasks s
            WHERE s.id = x.task ->> 'id'
          ) AS summary
          FROM jsonb_array_elements(r.tasks) WITH ORDINALITY AS x(task, n)
          WHERE NOT coalesce(created -> r.id ? (x.task ->> 'id'), false)
        ) e)
    ) ORDER BY r.i)
  INTO answer
  FROM jsonb_to_recordset(b) AS r(i int, id text, tasks jsonb);
  RETURN answer;
END
$$;

--> statement-breakpoint
-- oncehook_claim_tasks (migration 0008) again: a claim also writes where the request it leads to goes (the
-- action's origin for a send, the lookup's for a lookup), so a destination's maxInFlight counts the requests in
-- progress to an origin, whichever worker of whichever instance sent them. Routes gain destination and
-- lookupDestination; same signature, same decisions.
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
      "lookup" boolean, "maxAttempts" int, "leaseMs" bigint, destination text, "lookupDestination" text)
      ON r.source = p.source AND r.action = p.action
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

--> statement-breakpoint
-- The claim for actions whose origins a destination limits (config `destinations`): the limits hold across every
-- worker of every instance. The origins' advisory locks, taken in one order, let one claim at a time count what
-- an origin has in progress (tasks.request_origin) and what its token bucket holds; the tasks are then claimed as
-- oncehook_claim_tasks claims any, at most as many as every origin of the group allows, and each request's
-- tokens are taken from its origin's bucket. An advisory lock writes nothing, where locking the bucket's row
-- would write it on every claim, even one that finds nothing to do.
-- limits: [{origin, perSecond, burst, maxInFlight}], the origins open_routes' requests can go to (null: no such limit).
CREATE FUNCTION oncehook_claim_limited(worker text, open_routes jsonb, limits jsonb, max_tasks int)
RETURNS TABLE (id text, source text, action text, "eventId" text, topic text, body bytea, "contentType" text,
  attempts int, lookups int, mode text, "attemptId" int, reason text, "priorState" text)
LANGUAGE plpgsql
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  allowed int;
  claimed record;
  charged text[] := '{}';
BEGIN
  PERFORM pg_advisory_xact_lock(4207311, hashtext(l.origin))
  FROM (SELECT l.origin FROM jsonb_to_recordset(limits) AS l(origin text) ORDER BY l.origin COLLATE "C") l;

  SELECT min(least(
      coalesce(l."maxInFlight" - (SELECT count(*) FROM tasks t WHERE t.state = 'in_progress' AND t.request_origin = l.origin), max_tasks),
      coalesce(floor(least(l.burst, b.tokens + l."perSecond" * extract(epoch FROM now() - b.refilled_at))), l.burst, max_tasks)))::int
  INTO allowed
  FROM jsonb_to_recordset(limits) AS l(origin text, "perSecond" float8, burst int, "maxInFlight" int)
  LEFT JOIN destination_budgets b ON b.origin = l.origin;
  IF allowed IS NULL OR allowed <= 0 THEN
    RETURN;
  END IF;

  FOR claimed IN SELECT * FROM oncehook_claim_tasks(worker, open_routes, least(allowed, max_tasks)) LOOP
    id := claimed.id; source := claimed.source; action := claimed.action; "eventId" := claimed."eventId";
    topic := claimed.topic; body := claimed.body; "contentType" := claimed."contentType";
    attempts := claimed.attempts; lookups := claimed.lookups; mode := claimed.mode;
    "attemptId" := claimed."attemptId"; reason := claimed.reason; "priorState" := claimed."priorState";
    RETURN NEXT;
    IF claimed.mode <> 'review' THEN
      charged := charged || claimed.id;
    END IF;
  END LOOP;

  IF cardinality(charged) = 0 THEN
    RETURN;
  END IF;
  -- A token per request, from the bucket of the origin it goes to, refilled first for the time since.
  INSERT INTO destination_budgets (origin, tokens, refilled_at)
  SELECT l.origin, l.burst, now() FROM jsonb_to_recordset(limits) AS l(origin text, "perSecond" float8, burst int)
  WHERE l."perSecond" IS NOT NULL
  ORDER BY l.origin COLLATE "C"
  ON CONFLICT DO NOTHING;
  UPDATE destination_budgets d SET
    tokens = least(l.burst, d.tokens + l."perSecond" * extract(epoch FROM now() - d.refilled_at)) - n.requests,
    refilled_at = now()
  FROM (SELECT t.request_origin AS origin, count(*) AS requests FROM tasks t WHERE t.id = ANY (charged) GROUP BY 1) n
  JOIN jsonb_to_recordset(limits) AS l(origin text, "perSecond" float8, burst int) ON l.origin = n.origin
  WHERE d.origin = n.origin AND l."perSecond" IS NOT NULL;
END
$$;
