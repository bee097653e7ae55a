-- A replay still on its way may yet make its original's effect, so a bulk retry or replay leaves every task of its
-- replay tree (the original, its replays, theirs) alone, and a replay of one of them waits. Those trees are found
-- from the replays still running, which this index holds: a few rows, where every replay ever made is in
-- tasks_replay_idx. Only a replay's own state changes write it.
CREATE INDEX "tasks_running_replays_idx" ON "tasks" USING btree ("replay_of") WHERE replay_of is not null and state not in ('succeeded', 'failed', 'cancelled');