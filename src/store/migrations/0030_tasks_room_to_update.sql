-- Every claim and finish writes a new version of its task (no update of a task is HOT: its state is indexed), and
-- an ordered task's release one more. On a full page the new version went elsewhere: the free space map searched,
-- a second page read and dirtied, and on a large table a page last written before the latest checkpoint, whose
-- first change writes its full image to the WAL. Filled to 80 %, a page keeps room for them. Only pages written from
-- now on are filled so; the table is not rewritten.
ALTER TABLE "tasks" SET (fillfactor = 80);
