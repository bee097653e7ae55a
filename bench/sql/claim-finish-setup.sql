-- What the claim-finish scripts share, included by each (\ir): the tasks put back to pending, the route they are
-- claimed for, and the line that reports a run. Nothing of it is timed.
-- DESTRUCTIVE: it puts every task of the database back to pending. Run it only against the scratch database of
-- bench/sql/record-deliveries.sql, after that script has made at least 9,600 tasks.
UPDATE tasks SET state = 'pending', next_attempt_at = now() - interval '1 hour', lease_owner = NULL,
  lease_expires_at = NULL, attempts = 0
WHERE state <> 'pending';
VACUUM ANALYZE tasks;
VACUUM ANALYZE attempts;
CREATE OR REPLACE FUNCTION pg_temp.bench_routes() RETURNS jsonb LANGUAGE sql AS $$
  SELECT '[{"source": "shop", "action": "crm", "destination": "http://127.0.0.1:9", "keyed": true,
    "keyRetentionMs": 86400000, "lookup": false, "maxAttempts": 5, "leaseMs": 60000}]'::jsonb
$$;
CREATE OR REPLACE PROCEDURE pg_temp.report(started timestamptz, done int) LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE '% tasks claimed and finished, % µs per task', done,
    round(extract(epoch FROM clock_timestamp() - started) * 1e6 / greatest(done, 1));
END $$;
