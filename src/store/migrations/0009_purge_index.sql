-- Retention read every finished task of a source in its window and sorted them, on every batch of 500: a round
-- cost the square of what it purged (150,000 expired bodies in a 3,000,000-task table took 95 s; on PGlite each
-- batch held the process about a second), and counted a task's age from its receipt, so a task that failed a
-- month after it arrived lost its body at once. This index holds exactly what retention may purge, in the order
-- it expires from the task's last change: a batch reads its own rows and nothing else.
-- Built inside the migration's transaction, it holds off task writes while it builds: seconds per million
-- finished tasks that still hold a body.
CREATE INDEX "tasks_purge_idx" ON "tasks" USING btree ("source","updated_at","id") WHERE body is not null and state in ('succeeded', 'failed', 'cancelled');
