-- revision 1
-- oncehook_record_deliveries, for a batch holding receipts that ingest found already known before planning them
-- (src/store/queries/known-keys.ts): their delivery or event key was recorded, so their filters and transforms were
-- not run and their tasks are only named. Such a receipt can only be a duplicate of a delivery or of an event: keys
-- are never deleted. Should one be anything else — new, its tasks to be created unshaped — the whole batch is
-- refused and rolled back; the group commit then writes its receipts one by one, and only that delivery fails, with
-- a 503 that the sender retries and ingest plans in full. Decisions and answer are record_deliveries' own.
CREATE OR REPLACE FUNCTION oncehook_record_known_deliveries(batch json, channel text) RETURNS json
LANGUAGE plpgsql
AS $$
DECLARE
  answer json := oncehook_record_deliveries(batch, channel);
  wrong text;
BEGIN
  SELECT r.e ->> 'id' INTO wrong
  FROM json_array_elements(batch) WITH ORDINALITY AS r(e, n)
  JOIN json_array_elements(answer) WITH ORDINALITY AS a(e, n) ON a.n = r.n
  WHERE coalesce((r.e ->> 'known')::boolean, false)
    AND a.e ->> 'decision' NOT IN ('duplicate_delivery', 'duplicate_event')
  LIMIT 1;
  IF wrong IS NOT NULL THEN
    RAISE EXCEPTION 'receipt % was recorded as known before it was planned, but it is new', wrong
      USING HINT = 'a delivery or event key was deleted between ingest''s look-up and its record';
  END IF;
  RETURN answer;
END
$$;
