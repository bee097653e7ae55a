-- revision 1
-- The claim for actions whose origins a destination limits (config `destinations`): the limits hold across every
-- worker of every instance. The origins' advisory locks, taken in one order, let one claim at a time count what
-- an origin has in progress (tasks.request_origin) and what its token bucket holds; the tasks are then claimed as
-- oncehook_claim_batch claims any, at most as many as every origin of the group allows, and each request's
-- tokens are taken from its origin's bucket. An advisory lock writes nothing, where locking the bucket's row
-- would write it on every claim, even one that finds nothing to do.
-- limits: [{origin, perSecond, burst, maxInFlight}], the origins open_routes' requests can go to (null: no such limit).
-- It returns what oncehook_claim_batch returns. The earlier `oncehook_claim_limited`, which returned the ledger row a
-- claim opened, is dropped for the reason oncehook_claim_batch gives.
DROP FUNCTION IF EXISTS oncehook_claim_limited(text, jsonb, jsonb, int);--> statement-breakpoint
CREATE OR REPLACE FUNCTION oncehook_claim_batch_limited(worker text, open_routes jsonb, limits jsonb, max_tasks int)
RETURNS TABLE (id text, source text, action text, "eventId" text, topic text, body bytea, "contentType" text,
  attempts int, lookups int, mode text, claim int, reason text, "priorState" text, "requestUrl" text,
  "lookupUrl" text)
LANGUAGE plpgsql
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  allowed int;
  claimed record;
  charged text[] := '{}';
BEGIN
  PERFORM pg_advisory_xact_lock(4207311, hashtext(l.origin))
  FROM (SELECT l.origin FROM jsonb_to_recordset(limits) AS l(origin text) ORDER BY l.origin COLLATE "C") l;

  SELECT min(least(
      coalesce(l."maxInFlight" - (SELECT count(*) FROM tasks t WHERE t.state = 'in_progress' AND t.request_origin = l.origin), max_tasks),
      coalesce(floor(least(l.burst, b.tokens + l."perSecond" * extract(epoch FROM now() - b.refilled_at))), l.burst, max_tasks)))::int
  INTO allowed
  FROM jsonb_to_recordset(limits) AS l(origin text, "perSecond" float8, burst int, "maxInFlight" int)
  LEFT JOIN destination_budgets b ON b.origin = l.origin;
  IF allowed IS NULL OR allowed <= 0 THEN
    RETURN;
  END IF;

  FOR claimed IN SELECT * FROM oncehook_claim_batch(worker, open_routes, least(allowed, max_tasks)) LOOP
    id := claimed.id; source := claimed.source; action := claimed.action; "eventId" := claimed."eventId";
    topic := claimed.topic; body := claimed.body; "contentType" := claimed."contentType";
    attempts := claimed.attempts; lookups := claimed.lookups; mode := claimed.mode;
    claim := claimed.claim; reason := claimed.reason; "priorState" := claimed."priorState";
    "requestUrl" := claimed."requestUrl"; "lookupUrl" := claimed."lookupUrl";
    RETURN NEXT;
    IF claimed.mode <> 'review' THEN
      charged := charged || claimed.id;
    END IF;
  END LOOP;

  IF cardinality(charged) = 0 THEN
    RETURN;
  END IF;
  -- A token per request, from the bucket of the origin it goes to, refilled first for the time since.
  INSERT INTO destination_budgets (origin, tokens, refilled_at)
  SELECT l.origin, l.burst, now() FROM jsonb_to_recordset(limits) AS l(origin text, "perSecond" float8, burst int)
  WHERE l."perSecond" IS NOT NULL
  ORDER BY l.origin COLLATE "C"
  ON CONFLICT DO NOTHING;
  UPDATE destination_budgets d SET
    tokens = least(l.burst, d.tokens + l."perSecond" * extract(epoch FROM now() - d.refilled_at)) - n.requests,
    refilled_at = now()
  FROM (SELECT t.request_origin AS origin, count(*) AS requests FROM tasks t WHERE t.id = ANY (charged) GROUP BY 1) n
  JOIN jsonb_to_recordset(limits) AS l(origin text, "perSecond" float8, burst int) ON l.origin = n.origin
  WHERE d.origin = n.origin AND l."perSecond" IS NOT NULL;
END
$$;
