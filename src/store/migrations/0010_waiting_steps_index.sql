-- A step (an action's `after`) whose predecessor was cancelled, or failed with its effect made by a replay, waits
-- for ever, and the attention queue lists it. Read through the states' index, every look at the queue would walk
-- all pending tasks, a backlog of retries included; this index holds only the steps still waiting, so a look
-- costs what they are. Built inside the migration's transaction: it holds off task writes while it reads the
-- whole table (about 2 s for 1.3 million tasks).
CREATE INDEX "tasks_waiting_steps_idx" ON "tasks" USING btree ("after_task_id") WHERE state = 'pending' and after_task_id is not null;
--> statement-breakpoint
-- A failed task whose effect a replay made is out of the attention queue, and so is a step waiting for it no
-- longer. The replay that made it may be a replay of a replay (one that failed in turn), so the chain is
-- followed down, each link a probe of tasks_replay_idx. A function, with its cost declared, because as a
-- subquery in the queue's predicate the planner priced the recursion at a hundred links for every failed task and
-- walked every task in page order rather than read the queue's few rows and sort them.
CREATE FUNCTION oncehook_succeeded_replay(task_id text) RETURNS text
LANGUAGE sql STABLE COST 10
AS $$
  WITH RECURSIVE chain (id, state, created_at) AS (
    SELECT r.id, r.state, r.created_at FROM tasks r WHERE r.replay_of = task_id
    UNION
    -- OFFSET 0 keeps each link a probe: as a join the planner may hash every replay ever made instead.
    SELECT next.id, next.state, next.created_at
    FROM chain, LATERAL (SELECT r.id, r.state, r.created_at FROM tasks r WHERE r.replay_of = chain.id OFFSET 0) next
  )
  SELECT id FROM chain WHERE state = 'succeeded' ORDER BY created_at, id LIMIT 1
$$;
