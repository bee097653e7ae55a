/**
 * `npm run bench`: oncehook beside its ceilings, measured in one run on one machine, because on a shared
 * two-core box absolute figures drift from run to run while ratios measured side by side hold.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGateway } from './gateway.ts';
import { Cleanup } from './cleanup.ts';
import { parseOptions, type PhaseName } from './options.ts';
import type { Context, Results } from './phases/context.ts';
import { runCopyData } from './phases/copy-data.ts';
import { runEmbedded } from './phases/embedded.ts';
import { runEmbeddedSoak } from './phases/embedded-soak.ts';
import { runForward } from './phases/forward.ts';
import { runForwardOrdered } from './phases/forward-ordered.ts';
import { runForwardCeiling } from './phases/forward-ceiling.ts';
import { runForwardPriced } from './phases/forward-priced.ts';
import { runGrowth } from './phases/growth.ts';
import { runHttp } from './phases/http.ts';
import { runIngest } from './phases/ingest.ts';
import { runIngestShaped } from './phases/ingest-shaped.ts';
import { runPgBoss } from './phases/pgboss.ts';
import { runPgbench, runPgbenchNotify } from './phases/pgbench.ts';
import { runSoak } from './phases/soak.ts';
import { runStorm } from './phases/storm.ts';
import { runWholeJob } from './phases/whole-job.ts';
import { dropLeftovers, serverSettings } from './postgres.ts';
import { idleBusyShare } from './proc.ts';
import { renderReport, writeJson, type Environment } from './report.ts';

const RESULTS = fileURLToPath(new URL('./results', import.meta.url));
const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Past this share of the machine busy before any phase starts, the report says so. */
const BUSY_BEFORE_RUN = 0.1;

/** The phases that start oncehook gateways. */
const GATEWAY_PHASES = new Set<PhaseName>(['ingest', 'ingest-shaped', 'storm', 'forward', 'forward-ordered', 'forward-priced', 'whole-job', 'embedded', 'growth', 'soak', 'embedded-soak', 'copy-data']);

const PHASES: { [P in PhaseName]: { title: string; run: (ctx: Context) => Promise<NonNullable<Results[P]>> } } = {
  pgbench: { title: '(a) durable-commit ceiling: pgbench, dedup insert + outbox row per transaction', run: runPgbench },
  'pgbench-notify': { title: "(a') the same, plus ingest's pg_notify in each transaction", run: runPgbenchNotify },
  http: { title: '(b) HTTP ceiling: bare Hono echo', run: runHttp },
  ingest: { title: '(d) oncehook ingest: signed Shopify deliveries', run: runIngest },
  'ingest-shaped': { title: "(d′) ingest with the action's filter, then filter and transform, then the exposure limits, beside it plain, alternating", run: runIngestShaped },
  storm: { title: 'duplicate storm', run: runStorm },
  pgboss: { title: '(c) pg-boss: send, then work and forward', run: runPgBoss },
  'forward-ceiling': { title: '(e) forwarding ceiling: the same requests from a bare undici pool, no queue, no database', run: runForwardCeiling },
  forward: { title: '(d) oncehook forwarding', run: runForward },
  'forward-ordered': { title: "(d″) forwarding an action with order over 1,000 keys, beside it without, alternating", run: runForwardOrdered },
  'forward-priced': { title: '(d‴) forwarding with a URL template, and with an OAuth token, beside it plain, alternating', run: runForwardPriced },
  'whole-job': { title: 'the whole job: one process receiving and forwarding, oncehook against Hono + pg-boss', run: runWholeJob },
  embedded: { title: 'oncehook on embedded PGlite, receiving and forwarding (what npm start runs)', run: runEmbedded },
  growth: { title: 'growth: ingest, forwarding and the dashboard on a fresh database, then on millions of tasks of history', run: runGrowth },
  soak: { title: 'soak: ingest load, RSS sampled', run: runSoak },
  'embedded-soak': { title: "embedded soak: npm start's deployment at a steady rate, PGlite's upkeep pauses watched", run: runEmbeddedSoak },
  'copy-data': { title: 'copy-data: an embedded data directory copied into PostgreSQL by the real CLI', run: runCopyData },
};

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv);
  const cleanup = new Cleanup();
  cleanup.onSignals();
  try {
    const tmpDir = mkdtempSync(join(tmpdir(), 'oncehook-bench-'));
    cleanup.add(`remove ${tmpDir}`, () => rmSync(tmpDir, { recursive: true, force: true }));
    const leftovers = await dropLeftovers(options.pgUrl);
    const env: Environment = {
      startedAt: new Date().toISOString(),
      node: process.version,
      cores: availableParallelism(),
      commit: `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${git(['status', '--porcelain']) ? ' + uncommitted changes' : ''}`,
      postgres: await serverSettings(options.pgUrl),
      notes: [],
    };
    if (leftovers.length) env.notes.push(`dropped databases left by killed runs: ${leftovers.join(', ')}`);
    const busy = await idleBusyShare();
    if (busy > BUSY_BEFORE_RUN) {
      const note = `before the run the machine was ${(busy * 100).toFixed(0)} % busy with nothing of the bench running; every figure is lower for it (see top)`;
      console.log(`warning: ${note}`);
      env.notes.push(note);
    }

    const profileDir = options.cpuProf ? join(RESULTS, `${env.startedAt.replace(/[:.]/g, '-')}-profiles`) : null;
    const results: Results = {};
    const failures: string[] = [];
    if (!options.sources && options.phases.some((name) => GATEWAY_PHASES.has(name))) {
      console.log('building the production gateway (npm run build)…');
      buildGateway();
    }
    for (const name of options.phases) {
      if (cleanup.interrupted) break;
      const phase = PHASES[name];
      console.log(`\n▶ ${phase.title}`);
      const started = performance.now();
      const ctx: Context = { options, cleanup, tmpDir, profileDir, say: (line) => console.log(`  [${name}] ${line}`) };
      try {
        (results as Record<string, unknown>)[name] = await phase.run(ctx);
        console.log(`  [${name}] done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
      } catch (error) {
        if (cleanup.interrupted) break;
        // One phase failing still leaves the others' figures worth reading; the exit code says it failed.
        failures.push(`${name}: ${(error as Error).message}`);
        console.error(`  [${name}] FAILED: ${(error as Error).stack ?? String(error)}`);
      }
    }
    // Interrupted: the signal handler is cleaning up and will exit; a report of a cut-short run would mislead.
    if (cleanup.interrupted) return new Promise<number>(() => {});
    env.notes.push(...failures.map((f) => `phase failed: ${f.split('\n')[0]}`));
    if (results.forward && !results.forward.measured) console.log(`\nforwarding: not measured (${results.forward.reason})`);
    console.log(renderReport(env, options, results));
    if (options.json) console.log(`figures written to ${writeJson(RESULTS, env, options, results)}`);
    if (profileDir) console.log(`gateway CPU profiles (open in Chrome DevTools) in ${profileDir}`);
    return failures.length ? 1 : 0;
  } finally {
    await cleanup.run();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
