-- claim-finish.sql with the ledger written once, at the finish (issue 26): the claim does what
-- oncehook_claim_tasks does for a send but opens no attempts row, and the finish inserts the whole
-- row (started_at: the claim's time) instead of updating the open one. Database time per task, to compare with
-- claim-finish.sql run alternately on the same database. The claim's variant is a temporary function of this
-- session, made from the database's own: nothing of it stays in the database.
-- DESTRUCTIVE: it puts every task of the database back to pending first (claim-finish-setup.sql).
\ir claim-finish-setup.sql
-- The claim's variant: the database's own oncehook_claim_tasks (src/store/functions/) without its
-- `ledger` CTE, so the pick, the decision and the task update stay the product's. It stops if the function no
-- longer reads as this expects.
CREATE FUNCTION pg_temp.without(definition text, part text, replacement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF strpos(definition, part) = 0 THEN
    RAISE EXCEPTION 'oncehook_claim_tasks has changed: no "%" in it; update this script', part;
  END IF;
  RETURN replace(definition, part, replacement);
END $$;
DO $$
DECLARE
  definition text := pg_get_functiondef('oncehook_claim_tasks(text, jsonb, int)'::regprocedure);
  ledger_from int;
  ledger_to int;
BEGIN
  definition := pg_temp.without(definition, 'FUNCTION public.oncehook_claim_tasks(',
    'FUNCTION pg_temp.oncehook_claim_tasks_no_ledger(');
  definition := pg_temp.without(definition, ', "attemptId" integer', '');
  definition := pg_temp.without(definition, 'l.id::int, ', '');
  definition := pg_temp.without(definition, ' LEFT JOIN ledger l ON l.task_id = c.id', '');
  ledger_from := strpos(definition, E',\n  ledger AS (');
  ledger_to := strpos(definition, E'\n  SELECT c.id,');
  IF ledger_from = 0 OR ledger_to < ledger_from THEN
    RAISE EXCEPTION 'oncehook_claim_tasks has changed: no ledger CTE before its last SELECT; update this script';
  END IF;
  EXECUTE left(definition, ledger_from - 1) || substr(definition, ledger_to);
END $$;
DO $$
DECLARE
  routes jsonb := pg_temp.bench_routes();
  started timestamptz := clock_timestamp();
  done int := 0;
  ids text[];
  numbers int[];
  kinds text[];
  claimed_at timestamptz;
BEGIN
  FOR k IN 1..150 LOOP
    SELECT array_agg(id), array_agg(attempts), array_agg(mode), now() INTO ids, numbers, kinds, claimed_at
    FROM pg_temp.oncehook_claim_tasks_no_ledger('bench', routes, 64);
    COMMIT;
    -- What the worker would send back: each task's number and kind from the claim, and the claim's time.
    INSERT INTO attempts (task_id, number, kind, started_at, finished_at, response_status, duration_ms, class,
      decision, request_sha256)
    SELECT f.id, f.number, f.kind, claimed_at, now(), 200, 3, 'success', 'succeeded', 'bench'
    FROM unnest(ids, numbers, kinds) AS f(id, number, kind);
    UPDATE tasks SET state = 'succeeded', next_attempt_at = now(), lease_owner = NULL, lease_expires_at = NULL,
      last_error = NULL, updated_at = now()
    WHERE id = ANY (ids);
    COMMIT;
    done := done + coalesce(array_length(ids, 1), 0);
  END LOOP;
  CALL pg_temp.report(started, done);
END $$;
DROP FUNCTION pg_temp.oncehook_claim_tasks_no_ledger(text, jsonb, int);
DROP FUNCTION pg_temp.without(text, text, text);
