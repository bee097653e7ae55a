CREATE TABLE "alert_states" (
	"alert" text NOT NULL,
	"condition" text NOT NULL,
	"open" boolean DEFAULT false NOT NULL,
	"last_sent_at" timestamp with time zone,
	"sequence" integer DEFAULT 0 NOT NULL,
	"gathered" jsonb DEFAULT '{}'::jsonb NOT NULL,
	CONSTRAINT "alert_states_alert_condition_pk" PRIMARY KEY("alert","condition")
);
--> statement-breakpoint
CREATE TABLE "signature_failures" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "signature_failures_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"source" text NOT NULL,
	"check" text NOT NULL,
	"count" integer NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "task_transitions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "task_transitions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"task_id" text NOT NULL,
	"source" text NOT NULL,
	"action" text NOT NULL,
	"state" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "signature_failures_at_idx" ON "signature_failures" USING btree ("at");--> statement-breakpoint
-- Alerts tell people of tasks entering a state that waits for them. Each entry is noted as it happens, in the
-- transaction that makes it, so none is missed and none is counted twice, whichever worker or person moved the task.
-- Only those states: the claim's and the finish's ordinary changes (pending, in_progress, succeeded) do not fire it.
-- A lookup that could not tell (outcome_unknown again, with lookups asked) is the same unknown outcome, not a new
-- one; the alerts' own messages (source "_alerts", a name no configured source can have) are never noted, so an
-- alert endpoint that refuses cannot feed alerts about itself.
CREATE FUNCTION oncehook_note_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO task_transitions (task_id, source, action, state) VALUES (NEW.id, NEW.source, NEW.action, NEW.state);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tasks_transition_on_insert AFTER INSERT ON tasks FOR EACH ROW
  WHEN (NEW.state IN ('needs_review', 'outcome_unknown', 'failed', 'awaiting_approval') AND NEW.source <> '_alerts')
  EXECUTE FUNCTION oncehook_note_transition();
--> statement-breakpoint
CREATE TRIGGER tasks_transition_on_update AFTER UPDATE OF state ON tasks FOR EACH ROW
  WHEN (NEW.state IN ('needs_review', 'outcome_unknown', 'failed', 'awaiting_approval') AND NEW.source <> '_alerts'
    AND OLD.state IS DISTINCT FROM NEW.state AND NOT (NEW.state = 'outcome_unknown' AND NEW.lookups > 0))
  EXECUTE FUNCTION oncehook_note_transition();
