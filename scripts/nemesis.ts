/**
 * The network-fault test: `npm run test:nemesis -- --faults 1000 [--seed N] [--senders 3]`. Two gateways on a
 * private PostgreSQL cluster of the run's own (the shared one at 5432 is never restarted), fault proxies before
 * it and before the downstream, a gateway killed now and then, PostgreSQL restarted. test/e2e/nemesis.test.ts is
 * the short form. Runs the gateways from a build made for the run, as the e2e tests do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildInto } from '../test/support/build.ts';
import { FAULTS, percentile, runNemesis } from '../test/support/nemesis.ts';

const { values } = parseArgs({
  options: { faults: { type: 'string', default: '1000' }, seed: { type: 'string' }, senders: { type: 'string', default: '3' } },
});
const faults = Number(values.faults);
if (!Number.isInteger(faults) || faults < 1) throw new Error('--faults takes a whole number of faults, at least 1');

const root = mkdtempSync(join(tmpdir(), 'oncehook-nemesis-build-'));
try {
  await buildInto(join(root, 'build'));
  const summary = await runNemesis({
    faults,
    senders: Number(values.senders),
    bin: join(root, 'build', 'dist', 'src', 'cli', 'main.js'),
    ...(values.seed === undefined ? {} : { seed: Number(values.seed) }),
    log: (line) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`),
  });
  const ms = (v: number | undefined) => (v === undefined ? '-' : String(Math.round(v)));
  const all = Object.values(summary.recoveries).flat();
  const rows: [string, string | number][] = [
    ['seed', summary.seed],
    ['faults', Object.values(summary.faults).reduce((a, b) => a + b, 0)],
    ...FAULTS.map((f): [string, number] => [`  ${f}`, summary.faults[f]]),
    ['posts (retries included)', summary.posts],
    ['  answered 2xx', summary.ok],
    ['  2xx share %', ((100 * summary.ok) / Math.max(1, summary.posts)).toFixed(2)],
    ['deliveries accepted', summary.accepted],
    ['tasks', summary.tasks],
    ['effects', summary.effects],
    ['gateway starts', summary.starts],
    ['  exits not caused by a kill', summary.unexpectedExits],
    ['fault end → next 2xx, ms p50', ms(percentile(all, 50))],
    ['  p90', ms(percentile(all, 90))],
    ['  p99', ms(percentile(all, 99))],
    ['  max', ms(percentile(all, 100))],
    ...FAULTS.map((f): [string, string] => [`  ${f} p50 / p99 / max`, [50, 99, 100].map((p) => ms(percentile(summary.recoveries[f], p))).join(' / ')]),
    ['lost', summary.lost.length],
    ['doubled', summary.doubled.length],
    ['phantom', summary.phantom.length],
    ['duplicates accepted', summary.duplicatesAccepted.length],
    ['other violations', summary.other.length],
    ['minutes', (summary.seconds / 60).toFixed(1)],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(`\n${rows.map(([name, value]) => `${name.padEnd(width)}  ${String(value).padStart(16)}`).join('\n')}`);
  const violations = [...summary.lost, ...summary.doubled, ...summary.phantom, ...summary.duplicatesAccepted, ...summary.other];
  for (const violation of violations.slice(0, 50)) console.log(`VIOLATION ${violation}`);
  process.exitCode = violations.length === 0 ? 0 : 1;
} finally {
  rmSync(root, { recursive: true, force: true });
}
