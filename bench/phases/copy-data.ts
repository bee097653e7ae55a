/**
 * `oncehook copy-data` on a large embedded directory: `--copy-deliveries` deliveries, each with its task and dedup
 * keys, recorded as ingest records them, copied by the real CLI into a fresh PostgreSQL database. Rows a second
 * per table, the whole run, and the copier's peak RSS: PGlite runs inside it.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CopyReport } from '../../src/store/copy/copy-data.ts';
import { fillDataDir } from '../../test/support/filled-data-dir.ts';
import { spawnProcess } from '../children.ts';
import { oncehookScript } from '../gateway.ts';
import { freshDatabase } from '../postgres.ts';
import { RssSampler } from '../proc.ts';
import type { Context, CopyDataResult } from './context.ts';
import { bytesUnder } from './embedded-soak.ts';

export async function runCopyData(ctx: Context): Promise<CopyDataResult> {
  const o = ctx.options;
  const dataDir = join(ctx.tmpDir, 'copy-data');
  ctx.cleanup.add(`remove ${dataDir}`, () => rmSync(dataDir, { recursive: true, force: true }));
  ctx.say(`recording ${o.copyDeliveries.toLocaleString('en-US')} deliveries in an embedded data directory, 500 a transaction…`);
  await fillDataDir(dataDir, { deliveries: o.copyDeliveries, perTransaction: 500 });
  const database = await freshDatabase(o.pgUrl, 'copy-data', ctx.cleanup);
  try {
    const args = [oncehookScript(o.sources), 'copy-data', '--data-dir', dataDir, '--to', database.url, '--json'];
    const started = performance.now();
    const child = spawnProcess('oncehook copy-data', process.execPath, args, ctx.cleanup);
    const rss = new RssSampler(child.pid, 100);
    let stdout = '';
    let stderr = '';
    child.process.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.process.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      for (const line of chunk.toString().trimEnd().split('\n')) ctx.say(line);
    });
    const exit = await child.exited;
    const wallMs = performance.now() - started;
    const peakRssBytes = rss.stop();
    if (exit !== '0') throw new Error(`copy-data exited with ${exit}:\n${stderr.slice(-2000)}`);
    const report = JSON.parse(stdout) as CopyReport;
    return {
      deliveries: o.copyDeliveries,
      dataBytes: bytesUnder(dataDir),
      wallMs,
      copyMs: report.ms,
      tables: report.tables.map(({ name, rows, ms }) => ({ name, rows, ms })),
      peakRssBytes,
    };
  } finally {
    await database.drop();
  }
}
