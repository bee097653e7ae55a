ALTER TABLE "tasks" ADD COLUMN "effect_replay" text;--> statement-breakpoint
-- The attention queue leaves out a failed task whose effect a replay made, and a bulk retry passes over it. Asked of
-- the replay chain for every failed task on every look (each dashboard page, each scrape), that cost grew with every
-- failure ever replayed: about a second per look with 70,000 of them, the whole process held on PGlite. A replay
-- succeeds rarely; when it does, this trigger writes it on every task up its chain, and the looks test a column.
CREATE FUNCTION oncehook_note_replay_effect() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  WITH RECURSIVE up (id) AS (
    SELECT NEW.replay_of
    UNION
    SELECT t.replay_of FROM tasks t JOIN up ON t.id = up.id WHERE t.replay_of IS NOT NULL
  )
  UPDATE tasks SET effect_replay = NEW.id WHERE id IN (SELECT id FROM up) AND effect_replay IS NULL;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tasks_replay_effect AFTER UPDATE OF state ON tasks FOR EACH ROW
  WHEN (NEW.state = 'succeeded' AND NEW.replay_of IS NOT NULL AND OLD.state IS DISTINCT FROM 'succeeded')
  EXECUTE FUNCTION oncehook_note_replay_effect();
--> statement-breakpoint
-- The replays that succeeded before this migration.
UPDATE tasks t SET effect_replay = found.replay
FROM (
  SELECT replayed.id, oncehook_succeeded_replay(replayed.id) AS replay
  FROM (SELECT DISTINCT replay_of AS id FROM tasks WHERE replay_of IS NOT NULL) replayed
) found
WHERE t.id = found.id AND found.replay IS NOT NULL;
