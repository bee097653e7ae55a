import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { receiptId, sha256Hex, taskId } from '../../src/ids.ts';
import { recordDeliveries, type ReceiptInput } from '../../src/store/atomic/record.ts';
import { openStore } from '../../src/store/connect.ts';
import { migrate } from '../../src/store/migrate.ts';

/** Text that trips a text format: COPY's escapes and null marker, quotes, tabs, newlines, control characters, non-ASCII. */
export const AWKWARD = 'tab\there, line\nbreak, back\\slash, \\N, \'single\' "double", \u0001, Grüße 👋';

/** Every byte value once, in a body. */
const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

function receipt(n: number, body: Uint8Array, headers: Record<string, string> = { 'x-n': String(n) }): ReceiptInput {
  const eventId = `fill-e${n}`;
  return {
    id: receiptId(),
    source: 'shop',
    deliveryId: `fill-d${n}`,
    eventId,
    topic: n % 2 === 0 ? 'orders/create' : null,
    occurredAt: n % 3 === 0 ? new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 123)) : null,
    headers,
    contentType: 'application/json',
    body,
    bodySha256: sha256Hex(body),
    tasks: [{ id: taskId('shop', eventId, 'crm'), action: 'crm', state: 'pending', afterTaskId: null }],
    skipped: [],
  };
}

export const fillTaskId = (n: number) => taskId('shop', `fill-e${n}`, 'crm');

/**
 * An embedded data directory at this build's schema with rows in every table it has: deliveries recorded by
 * ingest's own function, several batches' worth for copy-data to page through, tasks in every state the move must
 * keep (a lease held, an unknown outcome, one a person must review), the ledger, operator decisions, destinations,
 * alerts, signature failures, refused requests. Values that a text format could mangle are in each kind of column. Deliveries are
 * recorded as ingest records them, `perTransaction` in each transaction.
 */
export async function fillDataDir(dataDir: string, size: { deliveries: number; perTransaction: number }): Promise<void> {
  const { deliveries, perTransaction } = size;
  const store = await openStore({ dataDir });
  try {
    await migrate(store);
    const db = store.db;
    // The third and fourth are one request's two events: its headers are stored with the third only.
    const batch = { 'x-batch': AWKWARD };
    const first = [
      receipt(1, ALL_BYTES, { 'x-awkward': AWKWARD }),
      receipt(2, randomBytes(300 * 1024)),
      receipt(3, new TextEncoder().encode(JSON.stringify({ note: AWKWARD })), batch),
      receipt(4, new TextEncoder().encode('{"n":4}'), batch),
    ];
    await recordDeliveries(db, first);
    for (let from = first.length + 1; from <= deliveries; from += perTransaction) {
      const batch = Array.from({ length: Math.min(perTransaction, deliveries - from + 1) }, (_, i) => receipt(from + i, new TextEncoder().encode(`{"n":${from + i}}`)));
      await recordDeliveries(db, batch);
    }
    const id = (n: number) => fillTaskId(n);
    await db.execute(sql`update deliveries set skipped = 'null'::jsonb where delivery_id = 'fill-d4'`);
    await db.execute(sql`update deliveries set skipped = ${JSON.stringify([{ action: 'mail', reason: 'filtered', detail: AWKWARD }])}::jsonb where delivery_id = 'fill-d5'`);
    await db.execute(
      sql`update tasks set state = 'in_progress', attempts = 1, first_attempt_at = now(), lease_owner = 'worker-gone',
          lease_expires_at = now() + interval '30 seconds', request_origin = 'http://127.0.0.1:9' where id = ${id(1)}`,
    );
    await db.execute(sql`update tasks set state = 'outcome_unknown', attempts = 1, first_attempt_at = '2026-01-02 03:04:05.123456+00', last_error = ${'\\N'} where id = ${id(2)}`);
    await db.execute(sql`update tasks set state = 'needs_review', attempts = 3, last_error = '', transform_error = ${AWKWARD}, owner = 'ana' where id = ${id(3)}`);
    await db.execute(sql`update tasks set state = 'succeeded', attempts = 1, result_reference = 'crm-1' where id = ${id(6)}`);
    await db.execute(sql`update tasks set state = 'awaiting_approval', source_body = ${Uint8Array.of(0, 0xff, 0x5c)} where id = ${id(7)}`);
    for (const [n, status] of [[1, null], [2, 504], [3, 500], [3, 500], [6, 201]] as const) {
      await db.execute(
        sql`insert into attempts (task_id, number, started_at, finished_at, request_sha256, response_status, duration_ms, class, error, decision)
            values (${id(n)}, 1, '2026-01-02 03:04:05.000001+00', ${status === null ? null : '2026-01-02 03:04:06.999999+00'}, 'abc',
                    ${status}, 42, ${status === null ? null : 'unknown'}, ${AWKWARD}, 'reconcile')`,
      );
    }
    // Given out and gone: the sequence stands past the largest ID left, and the copy must keep it there.
    await db.execute(sql`delete from attempts where id = (select max(id) from attempts)`);
    await db.execute(sql`insert into operator_actions (task_id, kind, actor, note, detail) values (${id(3)}, 'retry', 'ana', ${AWKWARD}, ${JSON.stringify({ sha256: 'abc', nested: { n: 1.5 } })}::jsonb)`);
    await db.execute(sql`insert into operator_actions (destination, kind, actor, note) values ('http://127.0.0.1:9', 'resume', 'ops', '')`);
    await db.execute(sql`insert into destinations (origin, paused_at, paused_reason) values ('http://127.0.0.1:9', now(), ${AWKWARD})`);
    await db.execute(sql`insert into destinations (origin, cooldown_until) values ('http://127.0.0.1:8', now() + interval '1 hour')`);
    await db.execute(sql`insert into destination_budgets (origin, tokens) values ('http://127.0.0.1:9', 3.141592653589793), ('http://127.0.0.1:8', 1e-300)`);
    await db.execute(
      sql`insert into alert_states (alert, condition, open, last_sent_at, sequence, gathered)
          values ('ops', 'needs_review', true, now(), 2, ${JSON.stringify({ count: 1, tasks: [id(3)], note: AWKWARD })}::jsonb)`,
    );
    await db.execute(sql`insert into signature_failures (source, "check", count) values ('shop', 'signature', 5), ('shop', 'timestamp', 1)`);
    await db.execute(
      sql`insert into rejection_counts (minute, source, reason, count)
          values (date_trunc('minute', now()), 'shop', 'invalid_signature', 7), ('2026-01-02 03:04:00+00', '(unknown)', 'unknown_source', 1)`,
    );
    await db.execute(
      sql`insert into rejection_samples (source, reason, at, remote_address, header_names)
          values ('shop', 'invalid_signature', now(), '::ffff:127.0.0.1', ${JSON.stringify(['x-awkward', AWKWARD])}::jsonb)`,
    );
    // A process killed without saying it stopped: its row stays until a day has passed.
    await db.execute(sql`insert into instances (id, host, pid, role, config_version, started_at) values ('gone/1/ab', ${AWKWARD}, 1, 'all', '0123456789ab', now())`);
  } finally {
    await store.close();
  }
}
