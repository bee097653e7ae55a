/**
 * The bench's targets, each read from figures measured side by side in one run: a ratio to a ceiling or to a
 * peer of the same run holds on a slow day and on a fast one. Where a target is not met, its row names what bounds
 * it from the same run's figures. Pure: results in, rows out.
 */
import { int, ms, pct, times } from './format.ts';
import type { BenchOptions, PhaseName } from './options.ts';
import type { LoadResult } from './load/protocol.ts';
import type { CpuShares } from './proc.ts';
import type { Results } from './phases/context.ts';

export type TargetStatus = 'met' | 'not met' | 'not measured' | 'not run' | 'failed';

export interface TargetRow {
  /** The target's number; target 5 has a row for each figure that must stay met (5a, 5b, 5c). */
  id: string;
  name: string;
  line: string;
  /** The ratio or figure the line is about; null when it was not measured. */
  value: number | null;
  /** What was measured, as printed; empty when nothing was. */
  measured: string;
  status: TargetStatus;
  /** Not met: what bounds it, from this run's figures. Not measured, not run or failed: why. */
  why: string[];
}

type Reading = { value: number; measured: string; met: boolean; bounds: string[] } | { unmeasured: string };

/** The results, with the figures of every phase in `Needs`. */
type With<Needs extends PhaseName> = Results & { [Phase in Needs]-?: NonNullable<Results[Phase]> };

interface Target<Needs extends PhaseName = PhaseName> {
  id: string;
  name: string;
  line: string;
  needs: Needs[];
  /** Called only when every phase it `needs` has its figures. */
  read(r: With<Needs>, o: TargetOptions): Reading;
}

/** A target whose `read` is typed by its `needs`; targets() calls it only once they are there. */
const target = <Needs extends PhaseName>(t: Target<Needs>) => t as Target;

export type TargetOptions = Pick<BenchOptions, 'phases' | 'concurrency' | 'stormSize'>;

/** The same run's CPU, as a bound names it: `name` is the process's key in the shares. */
const cpuOf = (c: CpuShares | null, name: 'gateway' | 'worker') =>
  c ? `the machine ${pct(c.machine)} busy: the ${name} ${pct(c.processes[name])} of a core, PostgreSQL ${pct(c.postgres)}` : null;

/**
 * Both sides run on the same cores, so the CPU each spends a task says how far apart they can be once those cores
 * are busy, whatever the closed loop left idle: the CPU of every process the phase watched (`ourProcess`, the
 * gateway or the worker, and its downstream) and of PostgreSQL over the window ÷ the tasks done in it. The load generator is the same for both
 * and not counted; nor is whatever else the machine ran, which a share of the whole machine would count.
 */
function cpuBudgetBound(
  ours: { cpu: CpuShares | null; perSecond: number },
  theirs: { cpu: CpuShares | null; perSecond: number; name: string },
  line: number,
  ourProcess: 'gateway' | 'worker',
): string | null {
  if (!ours.cpu || !theirs.cpu || ours.perSecond <= 0 || theirs.perSecond <= 0) return null;
  const perTask = (c: CpuShares, perSecond: number) => ((Object.values(c.processes).reduce((a, b) => a + b, 0) + c.postgres) * 1000) / perSecond;
  const msOurs = perTask(ours.cpu, ours.perSecond);
  const msTheirs = perTask(theirs.cpu, theirs.perSecond);
  return `CPU a task of the ${ourProcess}, its downstream and PostgreSQL: oncehook ${ms(msOurs)} ms, ${theirs.name} ${ms(msTheirs)} ms, so on the same busy cores ${times(msTheirs / msOurs)}; ${line}× needs oncehook at ${ms(msTheirs / line)} ms a task`;
}

/**
 * A closed loop's clients each wait for their answer, so their mean latency is clients ÷ answers per second, and a
 * p99 is never under the mean. Where the mean is over the line, the rate bounds the p99; where it is under, the tail
 * does, and the percentiles show how far it reaches.
 */
function latencyBound(clients: number, load: LoadResult, p99LineMs: number): string {
  const meanMs = (clients * 1000) / load.perSecond;
  const { p50, p99, p999 } = load.latencyMs;
  return meanMs > p99LineMs
    ? `${clients} clients at ${int(load.perSecond)} answers/s wait ${ms(meanMs)} ms on average, and a p99 is never under the mean: p99 ≤ ${p99LineMs} ms needs ${int((clients * 1000) / p99LineMs)} answers/s or more`
    : `${clients} clients at ${int(load.perSecond)} answers/s wait ${ms(meanMs)} ms on average; the tail sets the p99: p50 ${ms(p50)} ms, p99 ${ms(p99)} ms, p99.9 ${ms(p999)} ms`;
}

/** The whole job's line, ahead of the gateway a developer would write with Hono and pg-boss; 3× stretches it. */
const WHOLE_JOB_LINE = 2;
/** The drain's line: ahead of pg-boss, the peer a user would pick to work through a queue; 1.5× stretches it. */
const DRAIN_LINE = 1;

const TARGETS: Target[] = [
  target({
    id: '1',
    name: 'whole job: forwarded in the window ÷ Hono + pg-boss',
    line: `≥ ${WHOLE_JOB_LINE}×, ack p99 ≤ 50 ms (stretch 3×)`,
    needs: ['whole-job'],
    read(r, o) {
      const { oncehook: once, peer } = r['whole-job'];
      if (peer.forwardedPerSecond <= 0) return { unmeasured: 'the peer forwarded nothing within the window' };
      const value = once.forwardedPerSecond / peer.forwardedPerSecond;
      const p99 = once.load.latencyMs.p99;
      const bounds: string[] = [];
      if (value < WHOLE_JOB_LINE) {
        const keptUp = once.forwardedPerSecond >= 0.9 * once.load.acceptedPerSecond;
        bounds.push(
          `oncehook forwarded ${int(once.forwardedPerSecond)}/s of ${int(once.load.acceptedPerSecond)} accepted/s, the peer ${int(peer.forwardedPerSecond)} of ${int(peer.load.acceptedPerSecond)}: ${
            keptUp ? 'each forwards what it receives, so receiving sets the ratio' : "oncehook's forwarding fell behind its receiving"
          }`,
        );
        if (r.http && r['forward-ceiling']) {
          const h = r.http.load.perSecond;
          const e = r['forward-ceiling'].best.perSecond;
          const both = (h * e) / (h + e);
          bounds.push(
            `(b) a bare Hono echo (${int(h)}/s) and (e) a bare forwarder (${int(e)}/s) each fill the machine alone; one process doing both reaches at most ${int(both)}/s = ${times(both / peer.forwardedPerSecond)} the peer`,
          );
        }
        const budget = cpuBudgetBound({ cpu: once.cpu, perSecond: once.forwardedPerSecond }, { cpu: peer.cpu, perSecond: peer.forwardedPerSecond, name: 'the peer' }, WHOLE_JOB_LINE, 'gateway');
        if (budget) bounds.push(budget);
      }
      if (p99 > 50) bounds.push(latencyBound(o.concurrency, once.load, 50));
      const cpu = cpuOf(once.cpu, 'gateway');
      if (cpu && bounds.length > 0) bounds.push(cpu);
      return {
        value,
        measured: `${times(value)} (${int(once.forwardedPerSecond)} ÷ ${int(peer.forwardedPerSecond)} forwarded/s), ack p99 ${ms(p99)} ms`,
        met: value >= WHOLE_JOB_LINE && p99 <= 50,
        bounds,
      };
    },
  }),
  target({
    id: '2',
    name: 'receiving: ingest ÷ (a) pgbench ceiling',
    line: '≥ 1.5×, ack p99 ≤ 50 ms',
    needs: ['pgbench', 'ingest'],
    read(r, o) {
      const { pgbench, ingest } = r;
      const value = ingest.load.acceptedPerSecond / pgbench.tps;
      const p99 = ingest.load.latencyMs.p99;
      const bounds: string[] = [];
      if (value < 1.5) {
        const pgP50 = pgbench.latencyMs ? `, p50 ${ms(pgbench.latencyMs.p50)} ms a transaction` : '';
        bounds.push(`(a) ${int(pgbench.tps)} tps${pgP50}; ingest ${int(ingest.load.acceptedPerSecond)} accepted/s, ack p50 ${ms(ingest.load.latencyMs.p50)} ms`);
        if (r.http) {
          const http = r.http.load.perSecond / pgbench.tps;
          bounds.push(`(b) a bare Hono echo answered ${int(r.http.load.perSecond)}/s = ${times(http)} (a)${http < 1.5 ? ': HTTP alone is under the line' : ''}`);
        }
      }
      if (p99 > 50) bounds.push(latencyBound(o.concurrency, ingest.load, 50));
      const cpu = cpuOf(ingest.cpu, 'gateway');
      if (cpu && bounds.length > 0) bounds.push(cpu);
      return { value, measured: `${times(value)} (${int(ingest.load.acceptedPerSecond)} ÷ ${int(pgbench.tps)}), ack p99 ${ms(p99)} ms`, met: value >= 1.5 && p99 <= 50, bounds };
    },
  }),
  target({
    id: '3',
    name: 'draining a backlog ÷ (c) pg-boss work-and-forward',
    line: `≥ ${DRAIN_LINE}× (stretch 1.5×)`,
    needs: ['pgboss', 'forward'],
    read(r) {
      const { pgboss, forward } = r;
      if (!forward.measured) return { unmeasured: forward.reason };
      const value = forward.work.perSecond / pgboss.work.perSecond;
      const bounds: string[] = [];
      if (value < DRAIN_LINE) {
        const ceiling = r['forward-ceiling'];
        if (ceiling) {
          const e = ceiling.best.perSecond;
          bounds.push(`(e) a forwarder that records nothing: ${int(e)}/s = ${times(e / pgboss.work.perSecond)} pg-boss; oncehook at ${times(forward.work.perSecond / e)} of it`);
        }
        const budget = cpuBudgetBound({ cpu: forward.work.cpu, perSecond: forward.work.perSecond }, { cpu: pgboss.work.cpu, perSecond: pgboss.work.perSecond, name: 'pg-boss' }, DRAIN_LINE, 'worker');
        if (budget) bounds.push(budget);
        const cpu = cpuOf(forward.work.cpu, 'worker');
        if (cpu) bounds.push(cpu);
      }
      return { value, measured: `${times(value)} (${int(forward.work.perSecond)} ÷ ${int(pgboss.work.perSecond)} forwarded/s)`, met: value >= DRAIN_LINE, bounds };
    },
  }),
  target({
    id: '4',
    name: 'storm: p99 ÷ the same burst against the bare echo',
    line: '≤ 1.5×, exactly one accepted',
    needs: ['http', 'storm'],
    read({ http, storm }, o) {
      const echo = http.storm.latencyMs.p99;
      const value = storm.load.latencyMs.p99 / echo;
      const bounds: string[] = [];
      if (value > 1.5) {
        const share = storm.cpu?.processes.gateway;
        const perRequest = share === undefined ? '' : `; the gateway ${pct(share)} of a core over the burst, ${int((share * storm.load.windowMs * 1000) / o.stormSize)} µs of CPU a request`;
        bounds.push(`the echo answered the burst at p99 ${ms(echo)} ms, so the line is ${ms(1.5 * echo)} ms${perRequest}`);
        if (storm.cpu) bounds.push(`the machine ${pct(storm.cpu.machine)} busy`);
      }
      if (!storm.exactlyOneAccepted) bounds.push(`not exactly one accepted: ${JSON.stringify(storm.load.decisions)}, ${storm.tasksForTheEvent} tasks for the event`);
      return {
        value,
        measured: `${times(value)} (${ms(storm.load.latencyMs.p99)} ÷ ${ms(echo)} ms), ${storm.exactlyOneAccepted ? 'one accepted' : 'NOT one accepted'}`,
        met: value <= 1.5 && storm.exactlyOneAccepted,
        bounds,
      };
    },
  }),
  target({
    id: '5a',
    name: 'stays met: idle ack → first downstream request',
    line: '≤ 50 ms median',
    needs: ['forward'],
    read({ forward }) {
      if (!forward.measured) return { unmeasured: forward.reason };
      if (!forward.idleFirstForward) return { unmeasured: 'the backlog never finished, so the queue was never idle' };
      const { p50, max } = forward.idleFirstForward;
      return { value: p50, measured: `${ms(p50)} ms median, ${ms(max)} ms max`, met: p50 <= 50, bounds: [] };
    },
  }),
  target({
    id: '5b',
    name: 'stays met: soak RSS growth',
    line: '< 10 %',
    needs: ['soak'],
    read(r) {
      const growth = r.soak.growth * 100;
      return { value: growth, measured: `${growth.toFixed(1)} %`, met: growth < 10, bounds: [] };
    },
  }),
  target({
    id: '5c',
    name: "stays met: npm start's deployment on embedded PGlite",
    line: 'answered as sent, all forwarded within a minute',
    needs: ['embedded'],
    read({ embedded: e }) {
      const met = e.decisionsAsExpected && e.drainAfterMs !== null;
      const drained = e.drainAfterMs === null ? 'not all forwarded within a minute' : 'all forwarded';
      const bounds = e.decisionsAsExpected ? [] : [`answers not as sent: ${e.load.errors} errors, ${JSON.stringify(e.load.decisions)}`];
      return { value: e.load.acceptedPerSecond, measured: `${int(e.load.acceptedPerSecond)} accepted/s, ack p99 ${ms(e.load.latencyMs.p99)} ms, ${drained}`, met, bounds };
    },
  }),
  target({
    id: '5d',
    name: 'growth: ingest and forwarding on the history ÷ on a fresh database',
    line: '≥ 0.9× each',
    needs: ['growth'],
    read({ growth: g }) {
      if (g.ingestRatio === null || g.forwardRatio === null) return { unmeasured: 'a side accepted or forwarded nothing' };
      const value = Math.min(g.ingestRatio, g.forwardRatio);
      const side = (name: string, s: typeof g.fresh) =>
        `${name}: ${int(s.ingest.acceptedPerSecond)} accepted/s (ack p99 ${ms(s.ingest.latencyMs.p99)} ms), ${int(s.drain.perSecond)} forwarded/s; ${cpuOf(s.ingestCpu, 'gateway') ?? 'CPU not measured'} while receiving`;
      return {
        value,
        measured: `ingest ${times(g.ingestRatio)}, forwarding ${times(g.forwardRatio)} (${int(g.tasks)} tasks)`,
        met: value >= 0.9,
        bounds: [side('fresh', g.fresh), side('history', g.history), ...(g.freshAfter ? [side('fresh again', g.freshAfter)] : [])],
      };
    },
  }),
  target({
    id: '5e',
    name: "growth: the dashboard's home and /api/stats on the history",
    line: '≤ 200 ms each',
    needs: ['growth'],
    read({ growth: g }) {
      const reads = g.history.reads;
      const value = Math.max(...reads.map((read) => read.medianMs));
      const each = reads.map((read) => `${read.path} ${ms(read.medianMs)} ms (first ${ms(read.firstMs)})`).join(', ');
      const fresh = g.fresh.reads.map((read) => `${read.path} ${ms(read.medianMs)} ms`).join(', ');
      return { value, measured: `median ${ms(value)} ms at most`, met: value <= 200, bounds: [`on the history: ${each}`, `on a fresh database: ${fresh}`] };
    },
  }),
];

export function targets(r: Results, o: TargetOptions): TargetRow[] {
  return TARGETS.map((t) => {
    const row = { id: t.id, name: t.name, line: t.line };
    const missing = t.needs.filter((phase) => r[phase] === undefined);
    if (missing.length > 0) {
      const failed = missing.filter((phase) => o.phases.includes(phase));
      return failed.length > 0
        ? { ...row, value: null, measured: '', status: 'failed', why: [`phase ${failed.join(', ')} failed (see the notes at the top)`] }
        : { ...row, value: null, measured: '', status: 'not run', why: [`needs ${missing.join(', ')}`] };
    }
    // Every phase it needs has its figures: checked above.
    const reading = t.read(r as With<PhaseName>, o);
    if ('unmeasured' in reading) return { ...row, value: null, measured: '', status: 'not measured', why: [reading.unmeasured] };
    return { ...row, value: reading.value, measured: reading.measured, status: reading.met ? 'met' : 'not met', why: reading.met ? [] : reading.bounds };
  });
}

/** The table printed at the end of a run: a row a target, and under each one not met what bounds it. */
export function renderTargets(rows: TargetRow[]): string[] {
  const cells = rows.map((row) => [`${row.id.padEnd(2)}  ${row.name}`, row.measured || '—', row.line, row.status]);
  const head = ['target', 'measured', 'line', ''];
  const widths = [0, 1, 2].map((i) => Math.max(...[head, ...cells].map((c) => c[i]!.length)));
  const line = (c: string[]) => `${c[0]!.padEnd(widths[0]!)}  ${c[1]!.padEnd(widths[1]!)}  ${c[2]!.padEnd(widths[2]!)}  ${c[3]}`.trimEnd();
  const lines = [line(head)];
  rows.forEach((row, i) => {
    lines.push(line(cells[i]!));
    const label = row.status === 'not met' ? 'bound' : 'why';
    for (const why of row.why) lines.push(`      ${label}: ${why}`);
  });
  return lines;
}
