import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { int, mib, ms, pct, times } from './format.ts';
import type { LatencySummary } from './histogram.ts';
import type { BenchOptions } from './options.ts';
import type { CpuShares } from './proc.ts';
import { renderPricing } from './pricing.ts';
import { renderTargets, targets } from './targets.ts';
import { longestStepMs, type DrainResult, type IdleLatency, type Results, type WholeJobRun } from './phases/context.ts';
import { workerUsPerTask } from './phases/forward-priced.ts';
import type { GrowthResult, GrowthSide } from './phases/growth.ts';
import { median } from './phases/rss-drift.ts';
import { cpuUsPerDelivery, type ShapeFigures, type ShapeName } from './phases/shaped-cost.ts';

export interface Environment {
  startedAt: string;
  node: string;
  cores: number;
  commit: string;
  postgres: Record<string, string>;
  notes: string[];
}

export interface Ratio {
  name: string;
  value: number | null;
  unit: 'x' | 'ms' | '%';
}

/**
 * The ratios the bench has reported from its start, from figures measured side by side in this run. The targets
 * (targets.ts) are read from some of them; these are the figures beside them, with no line of their own.
 */
export function ratios(r: Results): Ratio[] {
  const ingest = r.ingest?.load.acceptedPerSecond ?? null;
  const forwarded = r.forward?.measured ? r.forward.work.perSecond : null;
  const div = (a: number | null, b: number | null | undefined) => (a !== null && b ? a / b : null);
  const whole = r['whole-job'];
  const shaped = (shape: ShapeName) => r['ingest-shaped']?.figures.find((f) => f.shape === shape)?.vsPlain ?? null;
  return [
    { name: 'ingest (accepted/s) ÷ (a) pgbench tps', value: div(ingest, r.pgbench?.tps), unit: 'x' },
    { name: "ingest (accepted/s) ÷ (a') pgbench + pg_notify", value: div(ingest, r['pgbench-notify']?.tps), unit: 'x' },
    { name: 'ingest p99 ack', value: r.ingest?.load.latencyMs.p99 ?? null, unit: 'ms' },
    { name: 'ingest (answered/s) ÷ (b) bare Hono', value: div(r.ingest?.load.perSecond ?? null, r.http?.load.perSecond), unit: 'x' },
    // Issue 22: what an action's filter and transform cost, each shape against plain ingest measured beside it.
    { name: '(d′) ingest with a filter ÷ without (accepted/s)', value: shaped('filter')?.acceptedPerSecond ?? null, unit: 'x' },
    { name: '(d′) ingest with a filter and a transform ÷ without (accepted/s)', value: shaped('filter + transform')?.acceptedPerSecond ?? null, unit: 'x' },
    { name: '(d′) gateway CPU per delivery, filter and transform ÷ without', value: shaped('filter + transform')?.cpuUsPerDelivery ?? null, unit: 'x' },
    { name: 'forwarding ÷ (c) pg-boss work-and-forward', value: div(forwarded, r.pgboss?.work.perSecond), unit: 'x' },
    { name: "(d″) forwarding with order over 1,000 keys ÷ without", value: r['forward-ordered']?.vsUnordered ?? null, unit: 'x' },
    // What any forwarder could reach here: a design that records nothing still shares the cores with the downstream.
    { name: '(e) forwarding ceiling ÷ (c) pg-boss', value: div(r['forward-ceiling']?.best.perSecond ?? null, r.pgboss?.work.perSecond), unit: 'x' },
    { name: 'forwarding ÷ (e) forwarding ceiling', value: div(forwarded, r['forward-ceiling']?.best.perSecond), unit: 'x' },
    { name: 'storm p99', value: r.storm?.load.latencyMs.p99 ?? null, unit: 'ms' },
    { name: 'storm p99 ÷ (b) bare Hono storm p99', value: div(r.storm?.load.latencyMs.p99 ?? null, r.http?.storm.latencyMs.p99), unit: 'x' },
    { name: 'whole job: oncehook ÷ Hono + pg-boss, forwarded in the window', value: whole ? wholeJobRatio(whole.oncehook, whole.peer) : null, unit: 'x' },
    { name: 'whole job: oncehook on embedded PGlite ÷ Hono + pg-boss', value: whole ? wholeJobRatio(whole.embedded, whole.peer) : null, unit: 'x' },
    { name: 'growth: ingest on the history ÷ on a fresh database (accepted/s)', value: r.growth?.ingestRatio ?? null, unit: 'x' },
    { name: 'growth: forwarding on the history ÷ on a fresh database', value: r.growth?.forwardRatio ?? null, unit: 'x' },
    { name: 'soak RSS growth', value: r.soak ? r.soak.growth * 100 : null, unit: '%' },
  ];
}

const lat = (l: LatencySummary | null, withTail = false) =>
  l ? `p50 ${ms(l.p50)} ms  p99 ${ms(l.p99)} ms${withTail ? `  p99.9 ${ms(l.p999)} ms  max ${ms(l.max)} ms` : ''}` : '';
const cpuLine = (c: CpuShares | null) =>
  c ? `CPU: gateway ${pct(c.processes.gateway)} of a core, postgres ${pct(c.postgres)} of a core, machine ${pct(c.machine)} of ${c.cores} cores` : 'CPU: gateway not measured';

const us = (n: number | null) => (n === null ? 'n/a' : `${int(n)} µs`);

/** A shape's means, and beside plain's what they come to. */
function shapeLine(f: ShapeFigures): string {
  const v = f.vsPlain;
  const beside = (n: number | null) => (v ? ` (${times(n)})` : '');
  const added = f.addedCpuUs === null ? '' : `, ${f.addedCpuUs >= 0 ? '+' : '−'}${us(Math.abs(f.addedCpuUs))}`;
  return `${f.shape}: ${int(f.acceptedPerSecond)} accepted/s${beside(v?.acceptedPerSecond ?? null)}, ack p50 ${ms(f.p50Ms)} ms${beside(v?.p50Ms ?? null)}  p99 ${ms(f.p99Ms)} ms${beside(v?.p99Ms ?? null)}, gateway CPU ${us(f.cpuUsPerDelivery)} per delivery${v ? ` (${times(v.cpuUsPerDelivery)}${added})` : ''}`;
}

/** Forwarded within the window, one gateway ÷ another; null when the other forwarded nothing. */
export const wholeJobRatio = (a: WholeJobRun, b: WholeJobRun) => (b.forwardedPerSecond > 0 ? a.forwardedPerSecond / b.forwardedPerSecond : null);

const wholeJobLines = (w: WholeJobRun) => {
  const c = w.cpu;
  return [
    `${w.gateway} on ${w.engine}: ${int(w.forwardedPerSecond)} forwarded/s within the window, ${int(w.load.acceptedPerSecond)} accepted/s, ack ${lat(w.load.latencyMs)}`,
    `    errors ${w.load.errors}; decisions as expected: ${w.decisionsAsExpected ? 'yes' : 'NO'} ${JSON.stringify(w.load.decisions)}; ${
      w.drainAfterMs === null ? 'the rest not forwarded within a minute of the load' : `the rest forwarded ${(w.drainAfterMs / 1000).toFixed(1)} s after it`
    }`,
    `    ${c ? `CPU: gateway ${pct(c.processes.gateway)} of a core, downstream ${pct(c.processes.downstream)}, postgres ${pct(c.postgres)}, machine ${pct(c.machine)} of ${c.cores} cores` : 'CPU not measured'}; peak RSS ${mib(w.peakRssBytes)}`,
  ];
};

const drainCpuLine = ({ cpu }: DrainResult) =>
  `CPU: worker ${pct(cpu.processes.worker)} of a core, downstream ${pct(cpu.processes.downstream)}, postgres ${pct(cpu.postgres)}, machine ${pct(cpu.machine)} of ${cpu.cores} cores`;

/** The worker's CPU a task over the drain, and what each part costs alone: the rest is the claim, the finish and the garbage. */
const partsLine = (work: DrainResult, parts: [string, number][]) =>
  `worker CPU a task: ${us(workerUsPerTask(work))}; alone: ${parts
    .map(([part, us]) => `${part} ${us.toFixed(1)}`)
    .join(', ')} µs`;

const idle = (l: IdleLatency | null) =>
  l ? `idle first-forward p50 ${ms(l.p50)} ms, max ${ms(l.max)} ms (${l.samplesMs.length} probes)` : 'idle first-forward: not measured (the backlog never finished)';

const forwardedLine = (e: { load: { decisions: Record<string, number> }; forwardedDuringLoad: number; drainAfterMs: number | null }) =>
  `forwarded in the same process: ${int(e.forwardedDuringLoad)} of ${int(e.load.decisions.accepted ?? 0)} by the end of the load, ${
    e.drainAfterMs === null ? 'the rest not within a minute' : `the rest ${(e.drainAfterMs / 1000).toFixed(1)} s after it`
  }`;

function formatRatio(r: Ratio): [string, string] {
  const show = (v: number) => (r.unit === 'x' ? `${v.toFixed(2)}×` : r.unit === 'ms' ? `${ms(v)} ms` : `${v.toFixed(1)} %`);
  return [r.name, r.value === null ? 'n/a' : show(r.value)];
}

/** The growth phase: each side's rates and reads, and how its database was made. */
function growthRow(g: GrowthResult): [string, string, string[]] {
  const t = g.template;
  const made = t.buildMs === null ? `kept from ${new Date(t.builtAtMs).toISOString().slice(0, 16)}` : `built in ${(t.buildMs / 1000).toFixed(0)} s`;
  const side = (name: string, s: GrowthSide) => [
    `${name} (${int(s.history)} tasks before): ${int(s.ingest.acceptedPerSecond)} accepted/s, ack ${lat(s.ingest.latencyMs)}, errors ${s.ingest.errors}; ${cpuLine(s.ingestCpu)}`,
    `    forwarded ${int(s.drain.perSecond)}/s, ${int(s.drain.completed)} of ${int(s.drain.backlog)} in ${(s.drain.elapsedMs / 1000).toFixed(1)} s${s.drain.drained ? '' : ' (not drained)'}; ${drainCpuLine(s.drain)}`,
    `    dashboard, first read after a start / median / longest of 5: ${s.reads.map((read) => `${read.path} ${ms(read.firstMs)}/${ms(read.medianMs)}/${ms(read.maxMs)} ms`).join(', ')}`,
  ];
  return [`growth (${int(g.tasks)} tasks of history)`, `ingest ${times(g.ingestRatio)}, forwarding ${times(g.forwardRatio)} of a fresh database`, [
    `the history: template ${t.name}, ${made}; its copy and last day made in ${(g.history.preparedMs / 1000).toFixed(0)} s; each ratio ÷ the two fresh databases' mean`,
    ...side('fresh', g.fresh),
    ...side('history', g.history),
    ...(g.freshAfter ? side('fresh again', g.freshAfter) : []),
  ]];
}

/** Rows of the figures table: phase, headline figure, details on continuation lines. */
function figureRows(r: Results, o: BenchOptions): Array<[string, string, string[]]> {
  const rows: Array<[string, string, string[]]> = [];
  for (const [label, p] of [['(a) pgbench ceiling', r.pgbench], ["(a') pgbench + pg_notify", r['pgbench-notify']]] as const) {
    if (!p) continue;
    const keys = p.rowsInserted === p.transactions ? 'every key new' : `only ${int(p.rowsInserted)} rows for ${int(p.transactions)} transactions`;
    rows.push([label, `${int(p.tps)} tps`, [`${lat(p.latencyMs, true)}`, `failed ${p.failed}, ${keys}`]]);
  }
  if (r.http) {
    const h = r.http;
    rows.push(['(b) HTTP ceiling (bare Hono)', `${int(h.load.perSecond)} req/s`, [
      lat(h.load.latencyMs, true),
      `errors ${h.load.errors}; CPU: server ${pct(h.serverCpu)} of a core, load generator ${pct(h.load.generatorCpu)}`,
      `storm (${o.stormSize} at once): ${lat(h.storm.latencyMs)}; all answered in ${ms(h.storm.windowMs)} ms, errors ${h.storm.errors}`,
      `storm CPU: server ${pct(h.stormServerCpu)} of a core, load generator ${pct(h.storm.generatorCpu)}`,
    ]]);
  }
  if (r.ingest) {
    const i = r.ingest;
    rows.push(['(d) oncehook ingest', `${int(i.load.acceptedPerSecond)} accepted/s`, [
      `${int(i.load.perSecond)} answered/s (${int(i.load.sent.duplicates)} of ${int(i.load.sent.unique + i.load.sent.duplicates)} sent were replays)`,
      `ack ${lat(i.load.latencyMs, true)}`,
      `errors ${i.load.errors}${i.load.firstError ? ` (first: ${i.load.firstError.slice(0, 80)})` : ''}; decisions as expected: ${i.decisionsAsExpected ? 'yes' : 'NO'} ${JSON.stringify(i.load.decisions)}`,
      `peak RSS ${mib(i.peakRssBytes)}; role ${i.role}${i.role === 'all' ? ' (no --role: plain serve)' : ''}`,
      `${cpuLine(i.cpu)}, load generator ${pct(i.load.generatorCpu)}`,
      ...(i.load.signedDuringRun ? [`${int(i.load.signedDuringRun)} deliveries were signed during timing (raise --presign-rate)`] : []),
    ]]);
  }
  const shaped = r['ingest-shaped'];
  if (shaped) {
    const both = shaped.figures.find((f) => f.shape === 'filter + transform');
    const runs = Math.max(0, ...shaped.figures.map((f) => f.runs));
    rows.push(['(d′) ingest, the action filtered and transformed; the exposure limits', both?.vsPlain ? `${times(both.vsPlain.acceptedPerSecond)} accepted/s of plain` : 'not compared', [
      `means of ${runs} run${runs === 1 ? '' : 's'} each, alternating; beside each, the figure ÷ plain's, and the CPU per delivery beyond plain's:`,
      ...shaped.figures.map(shapeLine),
      ...shaped.runs.map((run, i) => {
        const c = run.cpu;
        return `run ${i + 1}, ${run.shape}: ${int(run.load.acceptedPerSecond)} accepted/s, ${lat(run.load.latencyMs)}, errors ${run.load.errors}, as expected: ${run.decisionsAsExpected ? 'yes' : `NO ${JSON.stringify(run.load.decisions)}, ${int(run.tasksInDatabase)} tasks, ${int(run.shapedTasks)} shaped`}; ${
          c ? `gateway ${pct(c.processes.gateway)} of a core (${us(cpuUsPerDelivery(run))} per delivery), postgres ${pct(c.postgres)}, machine ${pct(c.machine)}` : 'CPU not measured'
        }`;
      }),
    ]]);
  }
  if (r.storm) {
    const s = r.storm;
    rows.push([`storm (${o.stormSize} identical at once)`, `p99 ${ms(s.load.latencyMs.p99)} ms`, [
      `exactly one accepted: ${s.exactlyOneAccepted ? 'yes' : 'NO'} ${JSON.stringify(s.load.decisions)}, statuses ${JSON.stringify(s.load.statuses)}`,
      `${lat(s.load.latencyMs, true)}; all answered in ${ms(s.load.windowMs)} ms; peak RSS ${mib(s.peakRssBytes)}`,
      `${cpuLine(s.cpu)}, load generator ${pct(s.load.generatorCpu)}`,
    ]]);
  }
  if (r.pgboss) {
    const b = r.pgboss;
    rows.push([`(c) pg-boss ${b.version}`, `${int(b.work.perSecond)} forwarded/s`, [
      `send ${int(b.send.perSecond)}/s (${lat(b.send.latencyMs)}, errors ${b.send.errors})`,
      `work and forward: ${int(b.work.completed)} of ${int(b.work.backlog)} jobs done in ${(b.work.elapsedMs / 1000).toFixed(1)} s${b.work.drained ? '' : ' (not drained)'}`,
      drainCpuLine(b.work),
      idle(b.idleFirstForward),
      `tuning: batchSize ${b.settings.batchSize}, ${b.settings.workers} workers, polling ${b.settings.pollingIntervalSeconds} s, pool ${b.settings.poolMax}`,
    ]]);
  }
  const ceiling = r['forward-ceiling'];
  if (ceiling) {
    rows.push(['(e) forwarding ceiling (bare undici)', `${int(ceiling.best.perSecond)} requests/s`, [
      "oncehook's requests to the same downstream; no queue, no database; the faster of:",
      ...ceiling.runs.map((run) =>
        `${run.inFlight} in flight on as many connections: ${int(run.perSecond)}/s, ${lat(run.latencyMs)}, errors ${run.errors}; ${
          run.cpu ? `CPU: sender ${pct(run.cpu.processes.sender)} of a core, downstream ${pct(run.cpu.processes.downstream)}, machine ${pct(run.cpu.machine)}` : 'CPU not measured'
        }`),
    ]]);
  }
  if (r.forward) {
    const f = r.forward;
    if (!f.measured) rows.push(['(d) oncehook forwarding', 'not measured', [f.reason]]);
    else {
      rows.push(['(d) oncehook forwarding', `${int(f.work.perSecond)} forwarded/s`, [
        `${int(f.work.completed)} of ${int(f.work.backlog)} tasks succeeded in ${(f.work.elapsedMs / 1000).toFixed(1)} s${f.work.drained ? '' : ' (not drained)'}`,
        drainCpuLine(f.work),
        ...(f.parts ? [partsLine(f.work, f.parts)] : []),
        `${idle(f.idleFirstForward)}; worker peak RSS ${mib(f.peakRssBytes)}`,
        `tuning: serve --role worker --concurrency ${o.workerConcurrency}`,
      ]]);
    }
  }
  const ordered = r['forward-ordered'];
  if (ordered) {
    rows.push(['(d″) forwarding with order over 1,000 keys', ordered.vsUnordered === null ? 'not compared' : `${times(ordered.vsUnordered)} forwarded/s of unordered`, [
      'alternating, each on a fresh database; the worker as in (d):',
      ...ordered.runs.map(
        (run, i) =>
          `run ${i + 1}, ${run.ordered ? 'ordered' : 'unordered'}: ${int(run.work.perSecond)} forwarded/s, ${int(run.work.completed)} of ${int(run.backlog)} in ${(run.work.elapsedMs / 1000).toFixed(1)} s${run.work.drained ? '' : ' (not drained)'}; ${drainCpuLine(run.work)}`,
      ),
    ]]);
  }
  const priced = r['forward-priced'];
  if (priced) {
    const tell = (n: number | null | undefined) => (n === null || n === undefined ? '' : ` (${times(n)})`);
    rows.push(["(d‴) forwarding with a URL template, an OAuth token", 'beside plain, alternating', [
      'means of each variant\'s runs, each figure ÷ plain\'s beside it: the fill\'s accepted/s, forwarded/s, the worker\'s CPU a task',
      ...priced.figures.map((f) => `${f.variant}: ${int(f.acceptedPerSecond)} accepted/s${tell(f.vsPlain?.acceptedPerSecond)}, ${int(f.forwardedPerSecond)} forwarded/s${tell(f.vsPlain?.forwardedPerSecond)}, worker ${us(f.workerUsPerTask)} a task${tell(f.vsPlain?.workerUsPerTask)}`),
      ...priced.runs.map(
        (run, i) =>
          `run ${i + 1}, ${run.variant}: ${int(run.fill.acceptedPerSecond)} accepted/s, ${int(run.work.perSecond)} forwarded/s, ${int(run.work.completed)} of ${int(run.backlog)}${run.work.drained ? '' : ' (not drained)'}; as expected: ${run.asExpected ? 'yes' : `NO (${int(run.ownUrls)} own URLs, ${run.tokens} tokens, ${int(run.authorized)} requests with one)`}; ${drainCpuLine(run.work)}`,
      ),
    ]]);
  }
  const whole = r['whole-job'];
  if (whole) {
    const { oncehook, peer, embedded, peerSettings: b } = whole;
    rows.push(['the whole job (receive and forward, one process)', `${times(wholeJobRatio(oncehook, peer))} the peer's forwarded`, [
      ...[oncehook, peer, embedded].flatMap(wholeJobLines),
      `oncehook on embedded PGlite ÷ the peer on PostgreSQL: ${times(wholeJobRatio(embedded, peer))}`,
      `tuning: oncehook serve ${whole.concurrency === null ? "with its default concurrency, as npm start runs it" : `--concurrency ${whole.concurrency}`}; the peer pg-boss ${b.version}, batchSize ${b.batchSize}, ${b.workers} workers, polling ${b.pollingIntervalSeconds} s, pool ${b.poolMax}, fetch on ${b.connections} connections`,
    ]]);
  }
  if (r.embedded) {
    const e = r.embedded;
    rows.push(['oncehook on embedded PGlite', `${int(e.load.acceptedPerSecond)} accepted/s`, [
      `${int(e.load.perSecond)} answered/s, ack ${lat(e.load.latencyMs, true)}`,
      `errors ${e.load.errors}; decisions as expected: ${e.decisionsAsExpected ? 'yes' : 'NO'} ${JSON.stringify(e.load.decisions)}`,
      forwardedLine(e),
      `peak RSS ${mib(e.peakRssBytes)}; ${cpuLine(e.cpu)}, load generator ${pct(e.load.generatorCpu)}`,
    ]]);
  }
  const growth = r.growth;
  if (growth) rows.push(growthRow(growth));
  if (r.soak) {
    const s = r.soak;
    rows.push([`soak (${o.soakSeconds} s)`, `RSS ${(s.growth * 100).toFixed(1)} %`, [
      `median ${mib(s.baselineRssBytes)} over the second fifth → ${mib(s.finalRssBytes)} over the last, peak ${mib(s.peakRssBytes)}`,
      `${int(s.load.acceptedPerSecond)} accepted/s, ack ${lat(s.load.latencyMs, true)}, errors ${s.load.errors}`,
    ]]);
  }
  const es = r['embedded-soak'];
  if (es) {
    const passes = es.upkeepPasses;
    const fifth = (from: number, to: number) => passes.filter((p) => p.atSeconds >= from * o.embeddedSoakSeconds && p.atSeconds < to * o.embeddedSoakSeconds);
    // Each step holds the process alone (the gateway answers between steps), so each is shown on its own.
    const spread = (ps: typeof passes) => {
      if (!ps.length) return 'none';
      const steps = [...new Set(ps.flatMap((p) => Object.keys(p.ms)))];
      return steps.map((step) => `${step} ${int(median(ps.map((p) => p.ms[step] ?? 0)))}/${int(Math.max(...ps.map((p) => p.ms[step] ?? 0)))}`).join(', ');
    };
    const longest = longestStepMs(passes);
    rows.push([`embedded soak (${o.embeddedSoakSeconds} s at ${int(es.ratePerSecond)}/s)`, `longest upkeep step ${longest === null ? 'n/a' : `${int(longest)} ms`}`, [
      `${int(es.load.perSecond)} answered/s, ack (from when each was due) ${lat(es.load.latencyMs, true)}`,
      `errors ${es.load.errors}; decisions as expected: ${es.decisionsAsExpected ? 'yes' : 'NO'} ${JSON.stringify(es.load.decisions)}`,
      `upkeep passes: ${passes.length}; each step's median/longest ms in the first fifth: ${spread(fifth(0, 0.2))}`,
      `in the last fifth: ${spread(fifth(0.8, 1.01))}`,
      `${int(es.load.decisions.accepted ?? 0)} tasks; data directory ${mib(es.dataBytes)} at the end`,
      `RSS median ${mib(es.baselineRssBytes)} over the second fifth → ${mib(es.finalRssBytes)} over the last (${(es.growth * 100).toFixed(1)} %), peak ${mib(es.peakRssBytes)}`,
      forwardedLine(es),
    ]]);
  }
  const cd = r['copy-data'];
  if (cd) {
    const total = cd.tables.reduce((sum, t) => sum + t.rows, 0);
    const deliveries = cd.tables.find((t) => t.name === 'deliveries');
    const rate = (t: { rows: number; ms: number }) => `${int((t.rows * 1000) / t.ms)}/s`;
    rows.push([`copy-data (${int(cd.deliveries)} deliveries)`, deliveries ? `${rate(deliveries)} deliveries` : 'n/a', [
      `${int(total)} rows in ${(cd.copyMs / 1000).toFixed(1)} s (${(cd.wallMs / 1000).toFixed(1)} s with the process's start), ${int((total * 1000) / cd.copyMs)} rows/s overall; data directory ${mib(cd.dataBytes)}`,
      `per table: ${cd.tables.filter((t) => t.rows >= 1000).map((t) => `${t.name} ${rate(t)}`).join(', ')}`,
      `peak RSS ${mib(cd.peakRssBytes)}`,
    ]]);
  }
  return rows;
}

export function renderReport(env: Environment, o: BenchOptions, r: Results): string {
  const lines: string[] = [];
  const pg = env.postgres;
  lines.push(
    '',
    `oncehook bench, ${env.startedAt}: concurrency ${o.concurrency}, ${o.duration} s per phase (+${o.warmup} s warm-up), ${(o.duplicates * 100).toFixed(0)} % replays, ${o.bodyBytes}-byte bodies`,
    `${env.cores} cores, Node ${env.node}, PostgreSQL ${pg.server_version ?? '?'} (fsync ${pg.fsync}, synchronous_commit ${pg.synchronous_commit}, wal_sync_method ${pg.wal_sync_method}, commit_delay ${pg.commit_delay}), commit ${env.commit}, gateway ${o.sources ? 'from the sources through tsx' : 'production build'}`,
    ...env.notes.map((n) => `note: ${n}`),
    '',
  );
  const rows = figureRows(r, o);
  const w = Math.max(...rows.map(([a]) => a.length), 10);
  for (const [phase, figure, details] of rows) {
    lines.push(`${phase.padEnd(w)}  ${figure}`);
    for (const d of details.filter(Boolean)) lines.push(`    ${d}`);
  }
  lines.push('');
  // A figure whose phases did not run is left out of the table (the JSON keeps it, as null) and named below it.
  const all = ratios(r);
  const table = all.filter((ratio) => ratio.value !== null).map(formatRatio);
  const head: [string, string] = ['ratio or figure', 'measured'];
  const widths = [0, 1].map((i) => Math.max(...[head, ...table].map((row) => row[i]!.length)));
  if (table.length > 0) {
    for (const row of [head, ...table]) lines.push(`${row[0].padEnd(widths[0]!)}  ${row[1].padStart(widths[1]!)}`);
  }
  const unmeasured = all.filter((ratio) => ratio.value === null).map((ratio) => ratio.name);
  if (unmeasured.length > 0) lines.push(`not measured in this run (their phases did not run): ${unmeasured.join('; ')}`);
  lines.push(...renderPricing(r), '', ...renderTargets(targets(r, o)), '');
  return lines.join('\n');
}

/** Writes everything measured, with the options and the machine, for a later run to be compared with. */
export function writeJson(dir: string, env: Environment, o: BenchOptions, r: Results): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${env.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ environment: env, options: o, results: r, ratios: ratios(r), targets: targets(r, o) }, null, 2)}\n`);
  return file;
}
