-- The forwarder's database work alone: claim 64 due tasks with oncehook_claim_tasks, commit, finish them as
-- succeeded, commit; 150 rounds. Database time per task, without HTTP or the worker.
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
  FOR k IN 1..150 LOOP
    SELECT array_agg(id), array_agg("attemptId") INTO ids, ledger FROM oncehook_claim_tasks('bench', routes, 64);
    COMMIT;
    UPDATE attempts SET finished_at = now(), response_status = 200, duration_ms = 3, class = 'success',
      decision = 'succeeded', request_sha256 = 'bench'
    WHERE id = ANY (ledger);
    UPDATE tasks SET state = 'succeeded', next_attempt_at = now(), lease_owner = NULL, lease_expires_at = NULL,
      last_error = NULL, updated_at = now()
    WHERE id = ANY (ids);
    COMMIT;
    done := done + coalesce(array_length(ids, 1), 0);
  END LOOP;
  CALL pg_temp.report(started, done);
END $$;
