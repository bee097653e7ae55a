-- revision 3
-- Records a batch of verified receipts (group commit) in one round trip. The stages run as separate statements, in
-- order, inside one transaction: under READ COMMITTED each statement takes a fresh snapshot, so a key whose insert
-- waited for a concurrent transaction is read back after that transaction committed. Each stage inserts its keys
-- sorted, so concurrent batches take row locks in one order and cannot deadlock. A repeat inside the batch is
-- decided as a repeat of the earlier receipt, exactly as if it came alone.
--
-- batch: a JSON array, one object per receipt in arrival order:
--   {i, id, source, delivery_id, event_id, topic, occurred_at, headers, headers_from, content_type, body (base64),
--    body_sha256, body_bytes, skipped, handshake, tasks: [{id, action, state, after_task_id, body, content_type,
--    body_sha256, transform_error, url, lookup_url, last_error, decision, order_key, order_mode, order_number,
--    order_text, order_by}] (sorted by id)}
-- Returns a JSON array in the same order:
--   {decision, receivedMs, first: {id, deliveryId, eventId, receivedMs, decision} | null, created: [{id, action, state}],
--    existing: [{id, action, state}]}, receivedMs being the transaction's time for every receipt.
--
-- - A task may carry its own body, content type and hash: what its action's transform made of the delivery, computed
--   before the transaction, so every attempt and every approval is of exactly those bytes. It keeps the delivery's
--   own bytes beside them (source_body), so that a replay, a new task with a new ID, is shaped again with its own
--   $taskId. A task whose transform failed is inserted failed, with a ledger row saying why.
-- - A task may carry the URLs its action's url and lookup url make of the delivery (url, lookup_url), stored with its
--   body (request_url, lookup_url), so that the request a person approves is the one sent. One whose URL could not be
--   made (a field the delivery lacks) is inserted failed as a failed transform's is, with its own words for the last
--   error and the ledger's decision (last_error, decision); without them, a failed transform's.
-- - A receipt carries the actions that made no task of it (skipped: a topic or a filter that did not match), for the
--   operator's "why no task".
-- - A handshake (a sender checking the endpoint before it sends events: Slack's url_verification, Meta's subscription
--   GET) claims a delivery key as any delivery does, so a replay of it is a duplicate_delivery and is recorded
--   nowhere; it claims no event key and makes no task.
-- - A request's headers are stored once, on its first receipt: the other events of a batch name it in headers_from.
-- - A task of an ordered action carries its key and position (order_key, order_mode, order_number, order_text, and
--   order_by as the delivery wrote it); the triggers of migration 0025 hold it behind its key's head. The batch's
--   keys are locked first, in one order, so two batches, or a batch and a finish, never wait for each other's keys.
--
-- The batch is parsed to jsonb once, and the tasks a batch created are kept by receipt and task ID: nothing is found
-- by scanning a list. Every table access is by key. After a burst, before autovacuum has analysed the tables, the
-- planner believes they hold a hundred rows and hashes a whole table instead of probing its key, so the function
-- rules sequential scans out; the penalty that does so inflates the plan's cost past the JIT threshold, and compiling
-- cost more than the call: no JIT either.
CREATE OR REPLACE FUNCTION oncehook_record_deliveries(batch json, channel text) RETURNS json
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  everything jsonb := batch::jsonb;
  -- The receipts whose event keys are claimed and that may make tasks: all but the handshakes.
  b jsonb := everything;
  -- Sets of receipt IDs: {receipt: true}.
  passed_delivery jsonb;
  passed_event jsonb;
  repeats jsonb;
  -- {receipt: {task ID: {id, action, state}}}: the tasks each receipt created.
  created jsonb;
  answer json;
BEGIN
  IF jsonb_path_exists(everything, '$[*] ? (@.handshake == true)') THEN
    SELECT coalesce(jsonb_agg(e ORDER BY n), '[]') INTO b
    FROM jsonb_array_elements(everything) WITH ORDINALITY AS x(e, n)
    WHERE NOT coalesce((e ->> 'handshake')::boolean, false);
  END IF;

  -- 1. Delivery keys: the first receipt of each key in the batch claims it; receipts whose claim was new pass.
  -- A handshake claims its key too, so that a replay of it is a duplicate_delivery, and writes nothing (stage 4).
  WITH r AS (
    SELECT * FROM jsonb_to_recordset(everything) AS r(i int, id text, source text, delivery_id text)
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
  FROM jsonb_to_recordset(everything) AS r(id text, source text, delivery_id text)
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

  PERFORM pg_advisory_xact_lock(k.lock)
  FROM (
    SELECT DISTINCT oncehook_order_lock(r.source, t.action, t.order_key) AS lock
    FROM jsonb_to_recordset(b) AS r(id text, source text, tasks jsonb)
    CROSS JOIN jsonb_to_recordset(r.tasks) AS t(action text, order_key text)
    WHERE passed_event ? r.id AND t.order_key IS NOT NULL
    ORDER BY 1
  ) k;

  -- 3. Tasks of the receipts that carried a new event; a task named twice belongs to the first receipt.
  -- A task's own body, content type and hash are what its action's transform made; without one, the receipt's.
  WITH named AS (
    SELECT r.i, r.id AS receipt, r.source, r.event_id, r.topic,
      CASE WHEN t.body IS NULL THEN r.content_type ELSE t.content_type END AS content_type,
      coalesce(t.body, r.body) AS body, coalesce(t.body_sha256, r.body_sha256) AS body_sha256,
      t.body IS NOT NULL AS shaped, r.body AS source_body,
      t.id, t.action, t.state, t.after_task_id, t.transform_error, t.url, t.lookup_url, t.last_error, t.decision,
      t.order_key, t.order_mode, t.order_number, t.order_text, t.order_by
    FROM jsonb_to_recordset(b) AS r(i int, id text, source text, event_id text, topic text, content_type text,
      body text, body_sha256 text, tasks jsonb)
    CROSS JOIN jsonb_to_recordset(r.tasks) AS t(id text, action text, state text, after_task_id text, body text,
      content_type text, body_sha256 text, transform_error text, url text, lookup_url text, last_error text, decision text,
      order_key text, order_mode text, order_number float8, order_text text, order_by text)
    WHERE passed_event ? r.id
  ), owned AS (
    SELECT DISTINCT ON (id) * FROM named ORDER BY id, i
  ), inserted AS (
    INSERT INTO tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256,
      after_task_id, transform_error, last_error, source_body, request_url, lookup_url, order_key, order_mode,
      order_number, order_text, order_by)
    SELECT id, source, action, event_id, topic, receipt, state, decode(body, 'base64'), content_type, body_sha256,
      after_task_id, transform_error, coalesce(last_error, 'the transform failed: ' || transform_error),
      CASE WHEN shaped THEN decode(source_body, 'base64') END, url, lookup_url, order_key, order_mode, order_number,
      order_text, order_by
    FROM owned ORDER BY id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING id, action, state, delivery_id, transform_error
  ), transform_ledger AS (
    -- A task whose transform failed has nothing to send: its ledger says so, in the transaction that made it.
    INSERT INTO attempts (task_id, number, kind, finished_at, class, error, decision)
    SELECT i.id, 0, 'transform', now(), 'transform_failed', i.transform_error,
      coalesce(o.decision, 'failed: the transform made no body, and nothing was sent; fix the action''s transform, then retry')
    FROM inserted i JOIN owned o ON o.id = i.id WHERE i.transform_error IS NOT NULL
    ORDER BY i.id COLLATE "C"
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

  -- 4. Every receipt but a repeated handshake, with its decision; the forwarder's wake-up commits with the tasks.
  -- A request's headers are on its first receipt; its other events name that receipt (headers_from).
  INSERT INTO deliveries (id, source, delivery_id, event_id, topic, occurred_at, decision, matched_delivery_id,
    headers, headers_from, content_type, body_sha256, body_bytes, skipped)
  SELECT r.id, r.source, r.delivery_id, r.event_id, r.topic, r.occurred_at,
    coalesce(repeats -> r.id ->> 'decision', CASE WHEN r.handshake THEN 'handshake' ELSE 'accepted' END),
    repeats -> r.id ->> 'first', r.headers, r.headers_from, r.content_type, r.body_sha256, r.body_bytes, r.skipped
  FROM jsonb_to_recordset(everything) AS r(i int, id text, source text, delivery_id text, event_id text, topic text,
    occurred_at timestamptz, headers jsonb, headers_from text, content_type text, body_sha256 text, body_bytes int,
    skipped jsonb, handshake boolean)
  WHERE NOT (coalesce(r.handshake, false) AND repeats ? r.id)
  ORDER BY r.i;
  IF created <> '{}' THEN
    PERFORM pg_notify(channel, '');
  END IF;

  -- 5. The answer: each decision with the record it matched and the tasks it names, in the receipt's order.
  SELECT json_agg(json_build_object(
      'decision', coalesce(repeats -> r.id ->> 'decision', CASE WHEN r.handshake THEN 'handshake' ELSE 'accepted' END),
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
  FROM jsonb_to_recordset(everything) AS r(i int, id text, tasks jsonb, handshake boolean);
  RETURN answer;
END
$$;
