-- A replay still on its way may yet make the effect: a bulk retry passes over the task it replays, and another replay
-- of that task is refused until it has finished. Only a task's own replays were asked, so a failed task whose replay
-- had failed in turn, with a replay of that replay still running, was retried in bulk: under its own key, which the
-- downstream never saw with the running replay's, so possibly a second effect. The chain is followed down, each
-- link a probe of tasks_replay_idx, as oncehook_succeeded_replay (migration 0010) does; the oldest still running
-- is named.
CREATE FUNCTION oncehook_unsettled_replay(task_id text) RETURNS text
LANGUAGE sql STABLE COST 10
AS $$
  WITH RECURSIVE chain (id, state, created_at) AS (
    SELECT r.id, r.state, r.created_at FROM tasks r WHERE r.replay_of = task_id
    UNION
    SELECT next.id, next.state, next.created_at
    FROM chain, LATERAL (SELECT r.id, r.state, r.created_at FROM tasks r WHERE r.replay_of = chain.id OFFSET 0) next
  )
  SELECT id FROM chain WHERE state NOT IN ('succeeded', 'failed', 'cancelled') ORDER BY created_at, id LIMIT 1
$$;
