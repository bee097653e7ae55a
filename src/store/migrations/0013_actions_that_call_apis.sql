CREATE TABLE "destination_budgets" (
	"origin" text PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"refilled_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "skipped" jsonb;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "transform_error" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "request_origin" text;--> statement-breakpoint
-- Made oncehook_record_deliveries store a task's own body and the actions that made no task, made
-- oncehook_claim_tasks write where each request goes, and created oncehook_claim_limited.
-- The functions are in src/store/functions/ now, applied after the migrations: a database that ran this
-- migration gets the same definitions as one that did not.
