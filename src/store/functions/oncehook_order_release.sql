-- revision 4
-- The keys whose heads a worker's finish ended (finish.ts), each brought to rest. The common case, a key in
-- `sequence` with no head left and a task held, releases its first held task, every such key of the batch in one
-- update; any other key (mode `latest`, a head there again, or a next task that changed before its release) takes
-- oncehook_order_settle's whole rule, as a person's decision does.
--
-- Called from the finish's own statement, after its heads have ended and under the locks it took of their keys:
-- each statement here reads with a snapshot of its own, taken under those locks, so it sees the heads ended and every
-- task another transaction placed in the keys before. The finish's snapshot, taken before the locks, would miss a
-- task ingest held behind a head meanwhile, and leave it held for ever.
--
-- The look for each key's next task is a statement apart from the update that releases it. A look walks the key's
-- entries in tasks_order_open_idx, where each version its finished tasks had (held, released, in progress) stays
-- until vacuum; it marks the ones no transaction can see as dead, and the next look steps over them without reading
-- their rows. A look in the update's own statement cannot mark them: that update has just written to the same index
-- page, and a page changed since it was read is left unmarked. Each look then read every version of the key's
-- finished tasks again, a cost that grew with the tasks a key had done since the last vacuum.
--
-- The update finds each next task by the row version the look read (its ctid): no descent of the primary key a task.
-- Its ID is checked too: between the two statements a version changed by another transaction (a person's cancel) may
-- be pruned and its slot given to another row. A next task not found so takes its key's whole rule.
CREATE OR REPLACE FUNCTION oncehook_order_release(k_sources text[], k_actions text[], k_keys text[], k_modes text[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  nexts tid[];
  next_ids text[];
  found text[];
  released text[];
BEGIN
  -- A key's unresolved tasks in the order of tasks_order_open_idx, unheld first: the first is its head if it has one,
  -- else the held task that goes next.
  SELECT array_agg(n.ctid), array_agg(n.id), array_agg(k.source || ':' || k.action || ':' || k.key)
  INTO nexts, next_ids, found
  FROM (SELECT DISTINCT * FROM unnest(k_sources, k_actions, k_keys, k_modes) AS u(source, action, key, mode)) k
  CROSS JOIN LATERAL (
    SELECT n.ctid, n.id, n.held FROM tasks n
    WHERE n.source = k.source AND n.action = k.action AND n.order_key = k.key
      AND n.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')
    ORDER BY n.held, n.order_number, n.order_text, n.order_seq
    LIMIT 1) n
  WHERE k.mode = 'sequence' AND n.held;
  WITH go AS (
    UPDATE tasks t SET held = false,
      next_attempt_at = CASE WHEN t.state = 'pending' THEN now() ELSE t.next_attempt_at END, updated_at = now()
    WHERE t.ctid = ANY (nexts) AND t.id = ANY (next_ids) AND t.held
    RETURNING t.source || ':' || t.action || ':' || t.order_key AS key
  )
  SELECT array_agg(go.key) INTO released FROM go;
  -- Source and action IDs hold no ":", so the names above are each one key's. A next task found but not released
  -- was ended or released in between (a person's cancel takes no lock of its key): the whole rule reads the key again.
  PERFORM oncehook_order_settle(k.source, k.action, k.key, k.mode)
  FROM (SELECT DISTINCT * FROM unnest(k_sources, k_actions, k_keys, k_modes) AS u(source, action, key, mode)) k
  WHERE NOT coalesce(k.source || ':' || k.action || ':' || k.key = ANY (released), false)
    AND (k.mode <> 'sequence' OR coalesce(k.source || ':' || k.action || ':' || k.key = ANY (found), false) OR EXISTS (
      SELECT 1 FROM tasks h
      WHERE h.source = k.source AND h.action = k.action AND h.order_key = k.key AND NOT h.held
        AND h.state IN ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')));
END
$$;
