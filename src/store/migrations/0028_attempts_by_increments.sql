-- Attempts by class are counted by increments, as receipts are (src/store/queries/increments.ts): each row carries
-- the transaction that wrote it. The rows already there take 0, below every transaction: committed, counted by the
-- first read. A constant default leaves them as they are, where pg_current_xact_id() would rewrite the table; the
-- default then becomes the writing transaction's for every row after.
ALTER TABLE "attempts" ADD COLUMN IF NOT EXISTS "txid" "xid8" DEFAULT '0'::xid8 NOT NULL;--> statement-breakpoint
ALTER TABLE "attempts" ALTER COLUMN "txid" SET DEFAULT pg_current_xact_id();--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "attempts_txid_idx" ON "attempts" USING btree ("txid","id");--> statement-breakpoint
-- A reclaim's row is the one whose class changes (a late result replaces it), so the tally and the charts count that
-- class whole, and this index holds only its rows, by the time the charts place them at.
CREATE INDEX IF NOT EXISTS "attempts_lease_expired_idx" ON "attempts" USING btree ("started_at") WHERE class = 'lease_expired';--> statement-breakpoint
-- A row whose class changes takes the changing transaction's ID, whoever writes it (a late result after a reclaim,
-- finish.ts, by this build or by one before it during a rolling upgrade): the tally meets it again, as a new row.
-- An update only: the inserts of the ledger, on forwarding's path, pay nothing for it.
CREATE FUNCTION oncehook_attempt_class_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.txid := pg_current_xact_id();
  RETURN NEW;
END $$;--> statement-breakpoint
CREATE TRIGGER attempts_class_changed BEFORE UPDATE OF class ON attempts
  FOR EACH ROW WHEN (OLD.class IS DISTINCT FROM NEW.class)
  EXECUTE FUNCTION oncehook_attempt_class_changed();
