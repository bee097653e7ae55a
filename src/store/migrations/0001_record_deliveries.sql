-- Records a batch of verified receipts (group commit) in one round trip. The stages run as separate
-- statements, in order, inside one transaction: under READ COMMITTED each statement takes a fresh snapshot,
-- so a key whose insert waited for a concurrent transaction is read back after that transaction committed.
-- Each stage inserts its keys sorted, so concurrent batches take row locks in one order and cannot deadlock.
-- A repeat inside the batch is decided as a repeat of the earlier receipt, exactly as if it came alone.
--
-- batch: a JSON array, one object per receipt in arrival order:
--   {i, id, source, delivery_id, event_id, topic, occurred_at, headers, content_type, body (base64),
--    body_sha256, body_bytes, tasks: [{id, action, state, after_task_id}] (sorted by id)}
-- Returns a JSON array in the same order:
--   {decision, first: {id, deliveryId, eventId, receivedMs, decision} | null, created: [{id, action, state}],
--    existing: [{id, action, state}]} and, once, the transaction's time as receivedMs of every receipt.
--
-- Every table access here is by key. After a burst, before autovacuum has analysed the tables, the planner
-- believes they hold a hundred rows and hashes a whole table instead of probing its key (measured: 3 ms of
-- a 4 ms call at 7,500 tasks), so the function rules sequential scans out. The penalty that rules them out
-- inflates the plan's cost past the JIT threshold, and compiling cost 25 ms per call: no JIT either.
CREATE FUNCTION oncehook_record_deliveries(batch json, channel text) RETURNS json
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  passed_delivery text[];
  passed_event text[];
  repeats jsonb;
  created jsonb;
  answer json;
BEGIN
  -- 1. Delivery keys: the first receipt of each key in the batch claims it; receipts whose claim was new pass.
  WITH r AS (
    SELECT * FROM json_to_recordset(batch) AS r(i int, id text, source text, delivery_id text)
  ), leaders AS (
    SELECT DISTINCT ON (source, delivery_id) source, delivery_id, id FROM r ORDER BY source, delivery_id, i
  ), claimed AS (
    INSERT INTO delivery_keys (source, delivery_id, first_delivery)
    SELECT source, delivery_id, id FROM leaders ORDER BY source COLLATE "C", delivery_id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING first_delivery
  )
  SELECT coalesce(array_agg(first_delivery), '{}') INTO passed_delivery FROM claimed;

  -- Every other receipt repeats a delivery; the key names the receipt that first carried it.
  SELECT coalesce(jsonb_object_agg(r.id, jsonb_build_object('decision', 'duplicate_delivery', 'first',
      (SELECT k.first_delivery FROM delivery_keys k WHERE k.source = r.source AND k.delivery_id = r.delivery_id))), '{}')
  INTO repeats
  FROM json_to_recordset(batch) AS r(id text, source text, delivery_id text)
  WHERE r.id <> ALL (passed_delivery);

  -- 2. Event keys, for the receipts that passed the delivery stage.
  WITH r AS (
    SELECT * FROM json_to_recordset(batch) AS r(i int, id text, source text, event_id text)
    WHERE r.id = ANY (passed_delivery)
  ), leaders AS (
    SELECT DISTINCT ON (source, event_id) source, event_id, id FROM r ORDER BY source, event_id, i
  ), claimed AS (
    INSERT INTO event_keys (source, event_id, first_delivery)
    SELECT source, event_id, id FROM leaders ORDER BY source COLLATE "C", event_id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING first_delivery
  )
  SELECT coalesce(array_agg(first_delivery), '{}') INTO passed_event FROM claimed;

  SELECT repeats || coalesce(jsonb_object_agg(r.id, jsonb_build_object('decision', 'duplicate_event', 'first',
      (SELECT k.first_delivery FROM event_keys k WHERE k.source = r.source AND k.event_id = r.event_id))), '{}')
  INTO repeats
  FROM json_to_recordset(batch) AS r(id text, source text, event_id text)
  WHERE r.id = ANY (passed_delivery) AND r.id <> ALL (passed_event);

  -- 3. Tasks of the receipts that carried a new event; a task named twice belongs to the first receipt.
  WITH named AS (
    SELECT r.i, r.id AS receipt, r.source, r.event_id, r.topic, r.content_type, r.body, r.body_sha256,
      t.id, t.action, t.state, t.after_task_id
    FROM json_to_recordset(batch) AS r(i int, id text, source text, event_id text, topic text, content_type text,
      body text, body_sha256 text, tasks json)
    CROSS JOIN json_to_recordset(r.tasks) AS t(id text, action text, state text, after_task_id text)
    WHERE r.id = ANY (passed_event)
  ), owned AS (
    SELECT DISTINCT ON (id) * FROM named ORDER BY id, i
  ), inserted AS (
    INSERT INTO tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256, after_task_id)
    SELECT id, source, action, event_id, topic, receipt, state, decode(body, 'base64'), content_type, body_sha256, after_task_id
    FROM owned ORDER BY id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING id, action, state, delivery_id
  )
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'action', action, 'state', state, 'receipt', delivery_id)), '[]')
  INTO created FROM inserted;

  -- A receipt with tasks that created none of them repeats the task work of the receipt that created its first.
  SELECT repeats || coalesce(jsonb_object_agg(r.id, jsonb_build_object('decision', 'duplicate_task',
      'first', (SELECT s.delivery_id FROM tasks s WHERE s.id = r.tasks -> 0 ->> 'id'))), '{}')
  INTO repeats
  FROM json_to_recordset(batch) AS r(id text, tasks json)
  WHERE r.id = ANY (passed_event) AND json_array_length(r.tasks) > 0
    AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(created) c WHERE c ->> 'receipt' = r.id);

  -- 4. Every receipt, with its decision; the forwarder's wake-up commits with the tasks.
  INSERT INTO deliveries (id, source, delivery_id, event_id, topic, occurred_at, decision, matched_delivery_id,
    headers, content_type, body_sha256, body_bytes)
  SELECT r.id, r.source, r.delivery_id, r.event_id, r.topic, r.occurred_at,
    coalesce(repeats -> r.id ->> 'decision', 'accepted'), repeats -> r.id ->> 'first',
    r.headers, r.content_type, r.body_sha256, r.body_bytes
  FROM json_to_recordset(batch) AS r(i int, id text, source text, delivery_id text, event_id text, topic text,
    occurred_at timestamptz, headers jsonb, content_type text, body_sha256 text, body_bytes int)
  ORDER BY r.i;
  IF jsonb_array_length(created) > 0 THEN
    PERFORM pg_notify(channel, '');
  END IF;

  -- 5. The answer: each decision with the record it matched and the tasks it names.
  SELECT json_agg(json_build_object(
      'decision', coalesce(repeats -> r.id ->> 'decision', 'accepted'),
      'receivedMs', extract(epoch FROM now()) * 1000,
      'first', (
        SELECT json_build_object('id', d.id, 'deliveryId', d.delivery_id, 'eventId', d.event_id,
          'receivedMs', extract(epoch FROM d.received_at) * 1000, 'decision', d.decision)
        FROM deliveries d WHERE d.id = repeats -> r.id ->> 'first'),
      'created', (
        SELECT coalesce(json_agg(json_build_object('id', c ->> 'id', 'action', c ->> 'action', 'state', c ->> 'state') ORDER BY x.n), '[]')
        FROM json_array_elements(r.tasks) WITH ORDINALITY AS x(task, n)
        JOIN jsonb_array_elements(created) c ON c ->> 'id' = x.task ->> 'id' AND c ->> 'receipt' = r.id),
      -- A scalar subquery per task, not a join: a join is planned for a hundred rows per set-returning
      -- function and hashes the whole tasks table.
      'existing', (
        SELECT coalesce(json_agg(e.summary ORDER BY e.n) FILTER (WHERE e.summary IS NOT NULL), '[]')
        FROM (
          SELECT x.n, (
            SELECT json_build_object('id', s.id, 'action', s.action, 'state', s.state) FROM tasks s
            WHERE s.id = x.task ->> 'id'
              AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(created) c WHERE c ->> 'id' = s.id AND c ->> 'receipt' = r.id)
          ) AS summary
          FROM json_array_elements(r.tasks) WITH ORDINALITY AS x(task, n)
        ) e)
    ) ORDER BY r.i)
  INTO answer
  FROM json_to_recordset(batch) AS r(i int, id text, tasks json);
  RETURN answer;
END
$$;
