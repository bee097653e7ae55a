CREATE TABLE "attempts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "attempts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"task_id" text NOT NULL,
	"number" integer NOT NULL,
	"kind" text DEFAULT 'send' NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"request_sha256" text,
	"response_status" integer,
	"duration_ms" integer,
	"class" text,
	"error" text,
	"reference" text,
	"decision" text
);
--> statement-breakpoint
CREATE TABLE "deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "deliveries_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"source" text NOT NULL,
	"delivery_id" text NOT NULL,
	"event_id" text NOT NULL,
	"topic" text,
	"occurred_at" timestamp with time zone,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"decision" text NOT NULL,
	"matched_delivery_id" text,
	"headers" jsonb NOT NULL,
	"content_type" text,
	"body_sha256" text NOT NULL,
	"body_bytes" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "delivery_keys" (
	"source" text NOT NULL,
	"delivery_id" text NOT NULL,
	"first_delivery" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "delivery_keys_source_delivery_id_pk" PRIMARY KEY("source","delivery_id")
);
--> statement-breakpoint
CREATE TABLE "destinations" (
	"origin" text PRIMARY KEY NOT NULL,
	"cooldown_until" timestamp with time zone,
	"paused_at" timestamp with time zone,
	"paused_reason" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_keys" (
	"source" text NOT NULL,
	"event_id" text NOT NULL,
	"first_delivery" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_keys_source_event_id_pk" PRIMARY KEY("source","event_id")
);
--> statement-breakpoint
CREATE TABLE "operator_actions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "operator_actions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"task_id" text,
	"destination" text,
	"kind" text NOT NULL,
	"actor" text NOT NULL,
	"note" text NOT NULL,
	"detail" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"source" text NOT NULL,
	"action" text NOT NULL,
	"event_id" text NOT NULL,
	"topic" text,
	"delivery_id" text NOT NULL,
	"state" text NOT NULL,
	"body" "bytea",
	"content_type" text,
	"body_sha256" text NOT NULL,
	"after_task_id" text,
	"replay_of" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"lookups" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"first_attempt_at" timestamp with time zone,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"last_error" text,
	"result_reference" text,
	"owner" text,
	"txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "attempts_task_idx" ON "attempts" USING btree ("task_id","number");--> statement-breakpoint
CREATE INDEX "deliveries_seq_idx" ON "deliveries" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "deliveries_page_idx" ON "deliveries" USING btree ("txid","seq");--> statement-breakpoint
CREATE INDEX "deliveries_source_event_idx" ON "deliveries" USING btree ("source","event_id");--> statement-breakpoint
CREATE INDEX "deliveries_source_delivery_idx" ON "deliveries" USING btree ("source","delivery_id");--> statement-breakpoint
CREATE INDEX "operator_actions_task_idx" ON "operator_actions" USING btree ("task_id","id");--> statement-breakpoint
CREATE INDEX "tasks_page_idx" ON "tasks" USING btree ("txid","id");--> statement-breakpoint
CREATE INDEX "tasks_replay_idx" ON "tasks" USING btree ("replay_of");--> statement-breakpoint
CREATE INDEX "tasks_due_idx" ON "tasks" USING btree ("next_attempt_at") WHERE state in ('pending', 'outcome_unknown');--> statement-breakpoint
CREATE INDEX "tasks_lease_idx" ON "tasks" USING btree ("lease_expires_at") WHERE state = 'in_progress';--> statement-breakpoint
CREATE INDEX "tasks_state_idx" ON "tasks" USING btree ("state","created_at");--> statement-breakpoint
CREATE INDEX "tasks_delivery_idx" ON "tasks" USING btree ("delivery_id");--> statement-breakpoint
CREATE INDEX "tasks_event_idx" ON "tasks" USING btree ("source","event_id");