ALTER TABLE "deliveries" ALTER COLUMN "headers" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "headers_from" text;--> statement-breakpoint
CREATE INDEX "deliveries_headers_from_idx" ON "deliveries" USING btree ("headers_from") WHERE headers_from is not null;--> statement-breakpoint
CREATE INDEX "deliveries_headers_purge_idx" ON "deliveries" USING btree ("source","received_at","id") WHERE headers is not null;--> statement-breakpoint
-- Made oncehook_record_deliveries claim a handshake's delivery key, and store a request's headers once, on its first
-- receipt (headers_from names it); retention purges headers, so they may be null.
-- The functions are in src/store/functions/ now, applied after the migrations: a database that ran this
-- migration gets the same definitions as one that did not.
