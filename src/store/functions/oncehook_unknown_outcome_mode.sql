-- revision 1
-- What the claim of an unknown outcome does, in database time: 'send' it again under the same key while the
-- downstream still keeps it (a keyed action, attempts left, the first attempt within the key's retention), else
-- 'lookup' while the action has one and lookups are left, else 'review' by a person (docs/forwarding.md). The
-- action's numbers are the claim's routes'; the counts and the first attempt are the task's (none yet: no live key).
-- The claim decides by it, and so do the views that say what an unknown outcome waits for: a lookup origin's waiting
-- lookups, and the paused lookup origin holding a task.
-- LANGUAGE sql, STABLE, one expression and no SET clause: the planner inlines it into the statement that calls it, so
-- a filter over every due task costs what the expression costs, not a function call a task.
CREATE OR REPLACE FUNCTION oncehook_unknown_outcome_mode(keyed boolean, key_retention_ms bigint, has_lookup boolean,
  max_attempts int, attempts int, lookups int, first_attempt_at timestamptz) RETURNS text
LANGUAGE sql STABLE
AS $$
  SELECT CASE
    WHEN keyed AND attempts < max_attempts AND first_attempt_at > now() - key_retention_ms * interval '1 millisecond' THEN 'send'
    WHEN has_lookup AND lookups < max_attempts THEN 'lookup'
    ELSE 'review'
  END
$$;
