DROP INDEX "tasks_replay_idx";--> statement-breakpoint
CREATE INDEX "tasks_replay_idx" ON "tasks" USING btree ("replay_of") WHERE replay_of is not null;