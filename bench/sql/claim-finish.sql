-- The forwarder's database work alone: claim 64 due tasks with oncehook_claim_tasks and finish them as succeeded,
-- 150 rounds. Database time per task, without HTTP or the worker. `-v variant=` picks how, to compare run
-- alternately on the same database:
--   two-trips (the default)  claim, commit; finish, commit: what the forwarder does.
--   one-trip                 each round finishes the batch the last round claimed and claims the next, then commits
--                            once, as one round trip from a worker would; half the commits for the same statements.
--                            The round trip saved on the network is not in the figure.
--   ledger-at-finish         the claim opens no attempts row and the finish inserts the whole row (started_at: the
--                            claim's time) instead of updating the open one.
-- Run it against the scratch database of bench/sql/record-deliveries.sql, after that script has made at least
-- 9,600 tasks:
--   psql -h 127.0.0.1 -U postgres -d scratch -v variant=one-trip -f bench/sql/claim-finish.sql
-- DESTRUCTIVE: it puts every task of the database back to pending first.
\if :{?variant}
\else
\set variant two-trips
\endif
SELECT :'variant' IN ('two-trips', 'one-trip', 'ledger-at-finish') AS known_variant,
  :'variant' = 'ledger-at-finish' AS ledger_at_finish,
  set_config('oncehook_bench.variant', :'variant', false) AS variant_set \gset
\if :known_variant
\else
\warn 'no variant named' :variant
\quit
\endif

-- Not timed: the tasks put back to pending.
UPDATE tasks SET state = 'pending', next_attempt_at = now() - interval '1 hour', lease_owner = NULL,
  lease_expires_at = NULL, attempts = 0
WHERE state <> 'pending';
VACUUM ANALYZE tasks;
VACUUM ANALYZE attempts;

\if :ledger_at_finish
-- The claim's variant: the database's own oncehook_claim_tasks (src/store/functions/) without its `ledger` CTE, so
-- the pick, the decision and the task update stay the product's. A temporary function of this session: nothing
-- of it stays in the database. It stops if the function no longer reads as this expects.
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
\endif

DO $$
DECLARE
  variant text := current_setting('oncehook_bench.variant');
  routes jsonb := '[{"source": "shop", "action": "crm", "destination": "http://127.0.0.1:9", "keyed": true,
    "keyRetentionMs": 86400000, "lookup": false, "maxAttempts": 5, "leaseMs": 60000}]';
  rounds int := 150;
  started timestamptz := clock_timestamp();
  done int := 0;
  -- The batch the last round claimed: its tasks, and their open attempts rows, or (ledger-at-finish) what the
  -- worker would send back to write them: each task's number and kind, and the claim's time.
  ids text[];
  ledger bigint[];
  numbers int[];
  kinds text[];
  claimed_at timestamptz;
BEGIN
  -- A round finishes the last round's batch, then claims the next; the last one only finishes.
  FOR k IN 1..rounds + 1 LOOP
    IF ids IS NOT NULL THEN
      IF variant = 'ledger-at-finish' THEN
        INSERT INTO attempts (task_id, number, kind, started_at, finished_at, response_status, duration_ms, class,
          decision, request_sha256)
        SELECT f.id, f.number, f.kind, claimed_at, now(), 200, 3, 'success', 'succeeded', 'bench'
        FROM unnest(ids, numbers, kinds) AS f(id, number, kind);
      ELSE
        UPDATE attempts SET finished_at = now(), response_status = 200, duration_ms = 3, class = 'success',
          decision = 'succeeded', request_sha256 = 'bench'
        WHERE id = ANY (ledger);
      END IF;
      UPDATE tasks SET state = 'succeeded', next_attempt_at = now(), lease_owner = NULL, lease_expires_at = NULL,
        last_error = NULL, updated_at = now()
      WHERE id = ANY (ids);
      done := done + array_length(ids, 1);
      IF variant <> 'one-trip' OR k > rounds THEN
        COMMIT;
      END IF;
    END IF;
    EXIT WHEN k > rounds;
    IF variant = 'ledger-at-finish' THEN
      SELECT array_agg(id), array_agg(attempts), array_agg(mode), now() INTO ids, numbers, kinds, claimed_at
      FROM pg_temp.oncehook_claim_tasks_no_ledger('bench', routes, 64);
    ELSE
      SELECT array_agg(id), array_agg("attemptId") INTO ids, ledger FROM oncehook_claim_tasks('bench', routes, 64);
    END IF;
    COMMIT;
  END LOOP;
  RAISE NOTICE '%: % tasks claimed and finished, % µs per task', variant, done,
    round(extract(epoch FROM clock_timestamp() - started) * 1e6 / greatest(done, 1));
END $$;
