-- An attempt's ledger row is written once, whole, when the attempt ends (its finish, a release, or the reclaim of
-- its lease), no longer opened by the claim and closed by the finish: one write of the row and its index entries a
-- task fewer. The claim keeps on the task what the row will need (claims, claimed_at, claim_kind); until the row is
-- written, they show the attempt in flight. The row's `claim` is the task's claim it ends, unique per task: a finish
-- sent twice, or a late one after a reclaim, cannot write a second row. Not `number`, which a release and a lookup
-- not counted take back, nor the claim's time, which PGlite keeps to the millisecond.
DROP INDEX "attempts_task_idx";--> statement-breakpoint
ALTER TABLE "attempts" ADD COLUMN "claim" integer;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "claims" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "claimed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "claim_kind" text;--> statement-breakpoint
-- The attempts in flight now, opened by the claim of the build before: their tasks take the columns this build's
-- claim writes, and their open rows go, to be written whole when the attempt ends, as any.
UPDATE "tasks" t SET "claims" = 1, "claimed_at" = a."started_at", "claim_kind" = a."kind"
FROM "attempts" a WHERE a."task_id" = t."id" AND a."finished_at" IS NULL AND t."state" = 'in_progress';--> statement-breakpoint
DELETE FROM "attempts" a USING "tasks" t
WHERE a."task_id" = t."id" AND a."finished_at" IS NULL AND t."state" = 'in_progress';--> statement-breakpoint
CREATE UNIQUE INDEX "attempts_claim_key" ON "attempts" USING btree ("task_id","claim");--> statement-breakpoint
-- Migration 0003 left room on each page for a row's finished version; a row is no longer rewritten but by a late
-- result after a reclaim, so new pages are packed full.
ALTER TABLE "attempts" RESET (fillfactor);
