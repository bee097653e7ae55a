import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { txid } from './txid.ts';

const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * The run ledger: one row per attempt and the decision taken after it, written whole when the attempt ends (its
 * finish, a release, the reclaim of its lease). Until then its task notes the claim (migration 0027).
 */
export const attempts = pgTable(
  'attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    taskId: text('task_id').notNull(),
    number: integer('number').notNull(),
    /** `send` (a POST to the action) or `lookup` (a GET asking whether the effect exists). */
    kind: text('kind').notNull().default('send'),
    /** The claim's time. */
    startedAt: at('started_at').notNull().defaultNow(),
    finishedAt: at('finished_at'),
    requestSha256: text('request_sha256'),
    responseStatus: integer('response_status'),
    durationMs: integer('duration_ms'),
    class: text('class'),
    error: text('error'),
    reference: text('reference'),
    decision: text('decision'),
    /** The task's claim it ends (`tasks.claims`); null for a transform's row and for rows from before migration 0027. */
    claim: integer('claim'),
    /**
     * The transaction that wrote the row, or that last changed its class (a trigger, migration 0028): the tally of
     * attempts by class counts by it (attempt-tally.ts). 0 for rows from before that migration.
     */
    txid: txid(),
  },
  (t) => [
    // One row per claim: a finish sent twice, or a late one after a reclaim, cannot write a second.
    uniqueIndex('attempts_claim_key').on(t.taskId, t.claim),
    // The charts' attempts by start time, as for deliveries (migration 0017).
    index('attempts_started_idx').using('brin', t.startedAt).with({ autosummarize: true }),
    // The tally's increments, in the order its first read counts the history in (migration 0028).
    index('attempts_txid_idx').on(t.txid, t.id),
    // The one class a row leaves: counted whole at each read, not by increments (attempt-tally.ts, minute-tally.ts).
    index('attempts_lease_expired_idx').on(t.startedAt).where(sql`class = 'lease_expired'`),
  ],
);
