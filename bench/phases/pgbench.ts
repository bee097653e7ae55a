/**
 * (a) The durable-commit ceiling: the least SQL one accepted delivery needs — the dedup insert and the
 * outbox row, in one transaction, on oncehook's own tables — at the same concurrency, measured by pgbench.
 * An ingest path that pays one commit per delivery cannot exceed this; one that groups commits can.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { spawnProcess } from '../children.ts';
import { orderBody } from '../deliveries.ts';
import { summarize } from '../histogram.ts';
import { freshDatabase, queryOnce } from '../postgres.ts';
import type { Context, PgbenchResult } from './context.ts';

const BIN = fileURLToPath(new URL('../../bin/oncehook.js', import.meta.url));

/**
 * Keys are unique per transaction — the client's ID and a random 63-bit number — so every transaction
 * inserts and none is a conflict. The body is hex-encoded: pgbench would read `":word` in JSON as a variable.
 *
 * `notify` adds the forwarder's wake-up that ingest sends in the same transaction. PostgreSQL takes one
 * database-wide lock from a notifying transaction's pre-commit until its commit is flushed, so notifying
 * transactions commit one at a time and cannot share a WAL flush: on the 2-core machine, 32 clients went
 * from ~5,000 to ~1,700 tps with it. Measured beside (a), it shows what one NOTIFY per delivery costs.
 */
export function pgbenchScript(bodyBytes: number, notify = false): string {
  const body = Buffer.from(orderBody('1', bodyBytes)).toString('hex');
  return `\\set k random(1, 9000000000000000000)
BEGIN;
INSERT INTO delivery_keys (source, delivery_id, first_delivery)
  VALUES ('shop', 'pgb-' || :client_id || '-' || :k, 'r_' || :client_id || '_' || :k)
  ON CONFLICT DO NOTHING RETURNING source;
INSERT INTO tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256)
  VALUES ('t_' || :client_id || '_' || :k, 'shop', 'crm', CAST(:k AS text), 'orders/create', 'r_' || :client_id || '_' || :k,
          'pending', decode('${body}', 'hex'), 'application/json', md5(CAST(:k AS text)))
  ON CONFLICT DO NOTHING RETURNING id, action, state;
${notify ? "SELECT pg_notify('oncehook_tasks', '');\n" : ''}END;
`;
}

export const runPgbench = (ctx: Context) => pgbench(ctx, 'pgbench', false);
export const runPgbenchNotify = (ctx: Context) => pgbench(ctx, 'pgbench_notify', true);

async function pgbench(ctx: Context, name: string, notify: boolean): Promise<PgbenchResult> {
  const { options } = ctx;
  const database = await freshDatabase(options.pgUrl, name, ctx.cleanup);
  try {
    return await measure(ctx, database.url, name, notify);
  } finally {
    await database.drop();
  }
}

async function measure(ctx: Context, url: string, name: string, notify: boolean): Promise<PgbenchResult> {
  const { options } = ctx;
  // oncehook's own migrations make the tables, so the script writes exactly the rows and indexes ingest does.
  await promisify(execFile)(process.execPath, [BIN, 'migrate'], { env: { ...process.env, DATABASE_URL: url } });
  const script = join(ctx.tmpDir, `${name}.sql`);
  writeFileSync(script, pgbenchScript(options.bodyBytes, notify));
  const logPrefix = join(ctx.tmpDir, `${name}_log`);
  const args = [
    '-c', String(options.concurrency),
    '-j', String(Math.min(2, options.concurrency)),
    '-T', String(options.duration),
    '-n',
    '-f', script,
    '-P', '2',
    '-l', `--log-prefix=${logPrefix}`,
    url,
  ];
  const pgbench = spawnProcess('pgbench', 'pgbench', args, ctx.cleanup);
  let stdout = '';
  let stderr = '';
  pgbench.process.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  pgbench.process.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const line of chunk.toString().split('\n')) {
      const m = /^progress: ([\d.]+) s, ([\d.]+) tps, lat ([\d.]+) ms.*?(\d+) failed/.exec(line);
      if (m) ctx.say(`${Number(m[1]).toFixed(0).padStart(4)} s  ${Math.round(Number(m[2])).toLocaleString('en-US').padStart(7)} tps  avg ${m[3]} ms  failed ${m[4]}`);
    }
  });
  const code = await pgbench.exited;
  if (code !== '0') throw new Error(`pgbench exited with ${code}:\n${stderr.slice(-2000)}\n${stdout.slice(-2000)}`);

  const field = (re: RegExp) => Number(re.exec(stdout)?.[1] ?? Number.NaN);
  const transactions = field(/number of transactions actually processed: (\d+)/);
  const rows = (await queryOnce<{ rows: number }>(url, 'select count(*)::int as rows from tasks'))[0]!.rows;
  return {
    tps: field(/tps = ([\d.]+) \(without initial connection time\)/),
    transactions,
    failed: field(/number of failed transactions: (\d+)/) || 0,
    rowsInserted: rows,
    latencyMs: transactionLatencies(ctx.tmpDir, `${name}_log.`),
    command: `pgbench ${args.slice(0, -1).join(' ')} <database>`,
  };
}

/** pgbench's per-transaction log (`-l`): the third field is the latency in microseconds. */
function transactionLatencies(dir: string, prefix: string) {
  const values: number[] = [];
  for (const file of readdirSync(dir).filter((f) => f.startsWith(prefix))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (Number.isFinite(us) && line) values.push(us / 1000);
    }
  }
  return values.length ? summarize(values.sort((a, b) => a - b)) : null;
}
