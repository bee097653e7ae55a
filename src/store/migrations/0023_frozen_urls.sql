ALTER TABLE "tasks" ADD COLUMN "request_url" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "lookup_url" text;