-- The forwarder's database work alone: claim 64 due tasks with oncehook_claim_batch and finish them as succeeded,
-- 150 rounds. Database time per task, without HTTP or the worker. `-v variant=` picks how, to compare run
-- alternately on the same database:
--   two-trips (the default)  claim, commit; finish, commit: what the forwarder does.
--   one-trip                 each round finishes the batch the last round claimed and claims the next, then commits
--                            once, as one round trip from a worker would; half the commits for the same statements.
--                            The round trip saved on the network is not in the figure.
-- Run it against the scratch database of bench/sql/record-deliveries.sql, after that script has made at least
-- 9,600 tasks:
--   psql -h 127.0.0.1 -U postgres -d scratch -v variant=one-trip -f bench/sql/claim-finish.sql
-- DESTRUCTIVE: it puts every task of the database back to pending first.
\if :{?variant}
\else
\set variant two-trips
\endif
SELECT :'variant' IN ('two-trips', 'one-trip') AS known_variant,
  set_config('oncehook_bench.variant', :'variant', false) AS variant_set \gset
\if :known_variant
\else
\warn 'no variant named' :variant
\quit
\endif

-- Not timed: the tasks put back to pending (their claims' numbers go on: each run writes new ledger rows).
UPDATE tasks SET state = 'pending', next_attempt_at = now() - interval '1 hour', lease_owner = NULL,
  lease_expires_at = NULL, attempts = 0
WHERE state <> 'pending';
VACUUM ANALYZE tasks;
VACUUM ANALYZE attempts;

DO $$
DECLARE
  variant text := current_setting('oncehook_bench.variant');
  routes jsonb := '[{"source": "shop", "action": "crm", "destination": "http://127.0.0.1:9", "keyed": true,
    "keyRetentionMs": 86400000, "lookup": false, "maxAttempts": 5, "leaseMs": 60000}]';
  rounds int := 150;
  started timestamptz := clock_timestamp();
  done int := 0;
  -- The batch the last round claimed: its tasks and their claims' numbers, which the finish names as the worker's does.
  ids text[];
  numbers int[];
BEGIN
  -- A round finishes the last round's batch, then claims the next; the last one only finishes. The finish is the
  -- product's (src/store/atomic/finish.ts) without its batch's JSON, ordered keys and destinations: the task, and
  -- its ledger row written whole from the claim the task notes.
  FOR k IN 1..rounds + 1 LOOP
    IF ids IS NOT NULL THEN
      WITH task AS (
        UPDATE tasks t SET state = 'succeeded', next_attempt_at = now(), lease_owner = NULL, lease_expires_at = NULL,
          last_error = NULL, updated_at = now()
        FROM unnest(ids, numbers) AS f(id, claim)
        WHERE t.id = f.id AND t.lease_owner = 'bench' AND t.state = 'in_progress' AND t.claims = f.claim
        RETURNING t.id, t.claims, t.attempts, t.claim_kind, t.claimed_at
      )
      INSERT INTO attempts (task_id, claim, number, kind, started_at, finished_at, response_status, duration_ms, class,
        decision, request_sha256)
      SELECT id, claims, attempts, claim_kind, claimed_at, now(), 200, 3, 'success', 'succeeded', 'bench' FROM task;
      done := done + array_length(ids, 1);
      IF variant <> 'one-trip' OR k > rounds THEN
        COMMIT;
      END IF;
    END IF;
    EXIT WHEN k > rounds;
    SELECT array_agg(id), array_agg(claim) INTO ids, numbers FROM oncehook_claim_batch('bench', routes, 64);
    COMMIT;
  END LOOP;
  RAISE NOTICE '%: % tasks claimed and finished, % µs per task', variant, done,
    round(extract(epoch FROM clock_timestamp() - started) * 1e6 / greatest(done, 1));
END $$;
