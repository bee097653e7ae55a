CREATE TABLE "delivery_bodies" (
	"delivery_id" text PRIMARY KEY NOT NULL,
	"body" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rejection_counts" (
	"minute" timestamp with time zone NOT NULL,
	"source" text NOT NULL,
	"reason" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "rejection_counts_minute_source_reason_pk" PRIMARY KEY("minute","source","reason")
);
--> statement-breakpoint
CREATE TABLE "rejection_samples" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "rejection_samples_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"source" text NOT NULL,
	"reason" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"remote_address" text,
	"header_names" jsonb NOT NULL
);
--> statement-breakpoint
-- A receipt's body as JSON, or null where it is not JSON (a form, XML, bytes that are not UTF-8): what the content
-- search's index holds (delivery_bodies_json_idx). An index expression must be immutable and must not fail, and
-- PostgreSQL 15 has no test of whether text parses, hence the exception block, whose subtransaction a parallel worker
-- cannot start: parallel restricted, so a parallel plan reads bodies in its leader. A new function only: it redefines
-- none of the earlier migrations'.
CREATE OR REPLACE FUNCTION oncehook_body_json(body bytea) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL RESTRICTED
AS $$
BEGIN
  RETURN convert_from(body, 'UTF8')::jsonb;
EXCEPTION WHEN data_exception OR program_limit_exceeded OR statement_too_complex THEN
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE INDEX "delivery_bodies_json_idx" ON "delivery_bodies" USING gin (oncehook_body_json("body") jsonb_path_ops);--> statement-breakpoint
CREATE INDEX "rejection_samples_pair_idx" ON "rejection_samples" USING btree ("source","reason","at");
