-- revision 1
-- The keys whose heads a worker's finish ended (finish.ts), each brought to rest. The common case, a key in
-- `sequence` with no head left and a task held, releases its first held task, every such key of the batch in one
-- update that reads each key's tasks once; any other key (mode `latest`, or a head there again) takes
-- oncehook_order_settle's whole rule, as a person's decision does.
--
-- Called from the finish's own statement, after its heads have ended and under the locks it took of their keys:
-- each statement here reads with a snapshot of its own, taken under those locks, so it sees the heads ended and every
-- task another transaction placed in the keys before. The finish's snapshot, taken before the locks, would miss a
-- task ingest held behind a head meanwhile, and leave it held for ever.
CREATE OR REPLACE FUNCTION oncehook_order_release(k_sources text[], k_actions text[], k_keys text[], k_modes text[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  released text[];
BEGIN
  -- A key's unresolved tasks in the order of tasks_order_open_idx, unheld first: the first is its head if it has one,
  -- else the held task that goes next.
  WITH go AS (
    UPDATE tasks t SET held = false,
      next_attempt_at = CASE WHEN t.state = 'pending' THEN now() ELSE t.next_attempt_at END, updated_at = now()
    FROM (SELECT DISTINCT * FROM unnest(k_sources, k_actions, k_keys, k_modes) AS u(source, action, key, mode)) k
    CROSS JOIN LATERAL (
      SELECT n.id, n.held FROM tasks n
      WHERE n.source = k.source AND n.action = k.action AND n.order_key = k.key
        AND n.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
      ORDER BY n.held, n.order_number, n.order_text, n.order_seq
      LIMIT 1) n
    WHERE k.mode = 'sequence' AND n.held AND t.id = n.id AND t.held
    RETURNING t.source || ':' || t.action || ':' || t.order_key AS key
  )
  SELECT array_agg(go.key) INTO released FROM go;
  -- Source and action IDs hold no ":", so the names above are each one key's.
  PERFORM oncehook_order_settle(k.source, k.action, k.key, k.mode)
  FROM (SELECT DISTINCT * FROM unnest(k_sources, k_actions, k_keys, k_modes) AS u(source, action, key, mode)) k
  WHERE NOT coalesce(k.source || ':' || k.action || ':' || k.key = ANY (released), false)
    AND (k.mode <> 'sequence' OR EXISTS (
      SELECT 1 FROM tasks h
      WHERE h.source = k.source AND h.action = k.action AND h.order_key = k.key AND NOT h.held
        AND h.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')));
END
$$;
