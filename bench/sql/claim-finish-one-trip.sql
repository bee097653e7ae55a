-- claim-finish.sql with a claim and the previous batch's finishes in one transaction (issue 26): each round
-- finishes the batch the last round claimed and claims the next, then commits once, as one round trip from a
-- worker would; a last commit finishes the last batch. Half the commits of claim-finish.sql for the same
-- statements. Database time per task, to compare with claim-finish.sql run alternately on the same database; the
-- round trip saved on the network is not in it.
-- DESTRUCTIVE: it puts every task of the database back to pending first (claim-finish-setup.sql).
\ir claim-finish-setup.sql
DO $$
DECLARE
  routes jsonb := pg_temp.bench_routes();
  started timestamptz := clock_timestamp();
  done int := 0;
  ids text[];
  ledger bigint[];
BEGIN
  FOR k IN 1..151 LOOP
    IF ids IS NOT NULL THEN
      UPDATE attempts SET finished_at = now(), response_status = 200, duration_ms = 3, class = 'success',
        decision = 'succeeded', request_sha256 = 'bench'
      WHERE id = ANY (ledger);
      UPDATE tasks SET state = 'succeeded', next_attempt_at = now(), lease_owner = NULL, lease_expires_at = NULL,
        last_error = NULL, updated_at = now()
      WHERE id = ANY (ids);
      done := done + array_length(ids, 1);
    END IF;
    ids := NULL;
    ledger := NULL;
    IF k <= 150 THEN
      SELECT array_agg(id), array_agg("attemptId") INTO ids, ledger FROM oncehook_claim_tasks('bench', routes, 64);
    END IF;
    COMMIT;
  END LOOP;
  CALL pg_temp.report(started, done);
END $$;
