/**
 * The long form of test/e2e/crash-matrix.test.ts: `npm run chaos -- --kills 200 [--seed N] [--embedded]`. Needs
 * the test PostgreSQL (ONCEHOOK_TEST_PG); runs in a fresh database of its own and drops it afterwards. With
 * `--embedded` the gateway runs on PGlite, as `npm start` does, in a new data directory removed afterwards.
 */
import { parseArgs } from 'node:util';
import { PHASES, runCrashMatrix } from '../test/support/crash.ts';
import { freshPostgresDatabase } from '../test/support/engine.ts';

const { values } = parseArgs({
  options: { kills: { type: 'string', default: '200' }, seed: { type: 'string' }, embedded: { type: 'boolean', default: false } },
});
const kills = Number(values.kills);
if (!Number.isInteger(kills) || kills < 1) throw new Error('--kills takes a whole number of kills, at least 1');

const database = values.embedded ? null : await freshPostgresDatabase();
const started = performance.now();
try {
  const summary = await runCrashMatrix({
    kills,
    ...(database ? { databaseUrl: database.url! } : {}),
    ...(values.seed === undefined ? {} : { seed: Number(values.seed) }),
    log: (line) => console.log(line),
  });
  const rows: [string, string | number][] = [
    ['engine', database ? 'PostgreSQL' : 'embedded PGlite'],
    ['seed', summary.seed],
    ['kills', summary.kills],
    ...PHASES.map((phase): [string, number] => [`  landed in ${phase}`, summary.phases[phase]]),
    ['deliveries answered 2xx', summary.deliveries],
    ['  of which accepted', summary.accepted],
    ['tasks', summary.tasks],
    ['requests to the downstream', summary.requests],
    ['effects', summary.effects],
    ['violations', summary.violations.length],
    ['minutes', ((performance.now() - started) / 60_000).toFixed(1)],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(`\n${rows.map(([name, value]) => `${name.padEnd(width)}  ${String(value).padStart(8)}`).join('\n')}`);
  for (const violation of summary.violations) console.log(`VIOLATION ${violation}`);
  process.exitCode = summary.violations.length === 0 ? 0 : 1;
} finally {
  await database?.drop();
}
