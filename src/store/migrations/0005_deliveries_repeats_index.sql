-- The operator's view of a receipt lists its repeats (matched_delivery_id = the receipt, by seq). No index
-- served it: the planner scanned every receipt (23 ms at 127,000 receipts, growing with the table). The seq
-- index it replaces served no query; each receipt now writes one entry fewer, a repeat the same number.
DROP INDEX "deliveries_seq_idx";--> statement-breakpoint
CREATE INDEX "deliveries_repeats_idx" ON "deliveries" USING btree ("matched_delivery_id","seq") WHERE matched_delivery_id is not null;