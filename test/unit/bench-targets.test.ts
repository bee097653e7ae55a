import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/options.ts';
import type { DrainResult, Results, WholeJobRun } from '../../bench/phases/context.ts';
import { renderTargets, targets, type TargetRow } from '../../bench/targets.ts';
import { cpuShares, loadResult } from '../support/bench-results.ts';

const everyPhase = parseOptions(['node', 'bench', '--soak']);
const only = (phases: string) => parseOptions(['node', 'bench', '--only', phases]);

function wholeJobRun(gateway: WholeJobRun['gateway'], forwardedPerSecond: number, p99: number): WholeJobRun {
  return {
    gateway,
    engine: 'PostgreSQL',
    load: loadResult(p99, { acceptedPerSecond: forwardedPerSecond, perSecond: forwardedPerSecond * 1.1 }),
    forwardedInWindow: forwardedPerSecond,
    forwardedPerSecond,
    decisionsAsExpected: true,
    drainAfterMs: 0,
    cpu: cpuShares({ gateway: 0.95, downstream: 0.2 }, 0.4, 0.99),
    peakRssBytes: null,
  };
}

const drain = (perSecond: number): DrainResult => ({
  backlog: 10_000,
  completed: 10_000,
  elapsedMs: 1000,
  perSecond,
  drained: true,
  downstreamReceived: 10_000,
  cpu: cpuShares({ worker: 0.8, downstream: 0.3 }, 0.6, 0.9),
});

/** Every phase a target reads, its figures set by the few numbers the targets compare. */
function results(f: {
  wholeJob: [number, number, number];
  ingest: [number, number];
  pgbench: number;
  forward: number;
  pgboss: number;
  storm: [number, number];
  oneAccepted?: boolean;
  idleMs?: number;
  soakGrowth?: number;
  /** The history's ingest and forwarding ÷ a fresh database's, and its slowest dashboard read (ms). */
  growth?: [number, number, number];
}): Results {
  const [oncehook, peer, p99] = f.wholeJob;
  const [ingestRatio, forwardRatio, readMs] = f.growth ?? [1, 1, 50];
  const side = (ratio: [number, number], ms: number, history: number) => ({
    history,
    preparedMs: 0,
    ingest: loadResult(30, { acceptedPerSecond: 3000 * ratio[0] }),
    ingestCpu: cpuShares({ gateway: 0.7 }),
    drain: drain(4000 * ratio[1]),
    reads: [{ path: '/ui/home', firstMs: ms * 3, medianMs: ms, maxMs: ms }, { path: '/api/stats', firstMs: ms, medianMs: ms / 2, maxMs: ms }],
  });
  return {
    pgbench: { tps: f.pgbench, transactions: 1, failed: 0, rowsInserted: 1, latencyMs: loadResult(30).latencyMs, command: 'pgbench' },
    http: { load: loadResult(4, { perSecond: 6000 }), serverCpu: 0.9, storm: loadResult(f.storm[1]), stormServerCpu: 0.8 },
    ingest: {
      role: 'web',
      load: loadResult(f.ingest[1], { acceptedPerSecond: f.ingest[0] }),
      peakRssBytes: null,
      cpu: cpuShares({ gateway: 0.7 }),
      decisionsAsExpected: true,
      tasksInDatabase: 1,
    },
    storm: {
      role: 'web',
      load: loadResult(f.storm[0], { windowMs: 500 }),
      peakRssBytes: null,
      cpu: cpuShares({ gateway: 1.1 }),
      exactlyOneAccepted: f.oneAccepted ?? true,
      tasksForTheEvent: f.oneAccepted === false ? 2 : 1,
    },
    pgboss: {
      version: '10.4.2',
      settings: { batchSize: 2000, workers: 4, pollingIntervalSeconds: 0.5, poolMax: 38 },
      send: { perSecond: 1, latencyMs: loadResult(5).latencyMs, errors: 0 },
      work: drain(f.pgboss),
      idleFirstForward: null,
    },
    'forward-ceiling': {
      runs: [{ inFlight: 32, completed: 1, perSecond: 12_000, errors: 0, latencyMs: loadResult(5).latencyMs, cpu: null }],
      best: { inFlight: 32, completed: 1, perSecond: 12_000, errors: 0, latencyMs: loadResult(5).latencyMs, cpu: null },
    },
    forward: {
      measured: true,
      fill: loadResult(20),
      work: drain(f.forward),
      idleFirstForward: { samplesMs: [f.idleMs ?? 12], p50: f.idleMs ?? 12, max: f.idleMs ?? 12 },
      peakRssBytes: null,
    },
    'whole-job': {
      oncehook: wholeJobRun('oncehook', oncehook, p99),
      peer: wholeJobRun('Hono + pg-boss', peer, 120),
      embedded: { ...wholeJobRun('oncehook', 400, 80), engine: 'embedded PGlite' },
      peerSettings: { version: '10.4.2', batchSize: 2000, workers: 4, pollingIntervalSeconds: 0.5, poolMax: 38, connections: 256 },
      concurrency: null,
    },
    embedded: {
      role: 'all',
      load: loadResult(90),
      peakRssBytes: null,
      cpu: null,
      decisionsAsExpected: true,
      forwardedDuringLoad: 900,
      drainAfterMs: 500,
    },
    soak: { load: loadResult(30), peakRssBytes: null, samples: [], baselineRssBytes: 100, finalRssBytes: 101, growth: f.soakGrowth ?? 0.01 },
    growth: {
      tasks: 10_000_000,
      template: { name: 'oncehook_history_0_10000000', tasks: 10_000_000, builtAtMs: 0, buildMs: null },
      fresh: side([1, 1], 20, 0),
      history: side([ingestRatio, forwardRatio], readMs, 10_000_000),
      ingestRatio,
      forwardRatio,
    },
  };
}

const byId = (rows: TargetRow[]) => new Map(rows.map((row) => [row.id, row]));
const statuses = (rows: TargetRow[]) => Object.fromEntries(rows.map((row) => [row.id, row.status]));

describe("the targets table", () => {
  it('meets each target exactly at its line', () => {
    const rows = targets(
      results({ wholeJob: [2000, 1000, 50], ingest: [3000, 50], pgbench: 2000, forward: 3000, pgboss: 3000, storm: [300, 200], idleMs: 50, soakGrowth: 0.099, growth: [0.9, 0.95, 200] }),
      everyPhase,
    );
    expect(statuses(rows)).toEqual({ 1: 'met', 2: 'met', 3: 'met', 4: 'met', '5a': 'met', '5b': 'met', '5c': 'met', '5d': 'met', '5e': 'met' });
    expect(byId(rows).get('5d')!.value).toBeCloseTo(0.9);
    expect(byId(rows).get('1')!.value).toBe(2);
    expect(rows.every((row) => row.why.length === 0)).toBe(true);
  });

  it('misses each target just past its line', () => {
    const rows = targets(
      results({ wholeJob: [1990, 1000, 40], ingest: [2990, 40], pgbench: 2000, forward: 2990, pgboss: 3000, storm: [301, 200], idleMs: 50.1, soakGrowth: 0.1, growth: [1, 0.89, 201] }),
      everyPhase,
    );
    expect(statuses(rows)).toEqual({ 1: 'not met', 2: 'not met', 3: 'not met', 4: 'not met', '5a': 'not met', '5b': 'not met', '5c': 'met', '5d': 'not met', '5e': 'not met' });
    expect(byId(rows).get('5d')!.why.map((why) => why.split(':')[0])).toEqual(['fresh', 'history']);
    expect(byId(rows).get('5e')!.why[0]).toContain('/ui/home 201 ms (first 603)');
  });

  it('misses a ratio that is met when its p99 is over the line, or the storm when more than one was accepted', () => {
    const rows = byId(
      targets(results({ wholeJob: [4000, 1000, 51], ingest: [4000, 51], pgbench: 2000, forward: 6000, pgboss: 3000, storm: [200, 200], oneAccepted: false }), everyPhase),
    );
    expect(rows.get('1')!.status).toBe('not met');
    expect(rows.get('2')!.status).toBe('not met');
    expect(rows.get('4')!.status).toBe('not met');
    expect(rows.get('4')!.why).toEqual(['not exactly one accepted: {"accepted":900,"duplicate_delivery":100}, 2 tasks for the event']);
  });

  it('names what bounds a target not met, from the same run', () => {
    const rows = byId(targets(results({ wholeJob: [1800, 1000, 64], ingest: [2500, 30], pgbench: 2000, forward: 2400, pgboss: 3000, storm: [400, 200] }), everyPhase));
    const whole = rows.get('1')!;
    expect(whole.measured).toBe('1.80× (1,800 ÷ 1,000 forwarded/s), ack p99 64.0 ms');
    expect(whole.why).toEqual([
      'oncehook forwarded 1,800/s of 1,800 accepted/s, the peer 1,000 of 1,000: each forwards what it receives, so receiving sets the ratio',
      // 6,000 × 12,000 ÷ 18,000: the echo's and the bare forwarder's rates, sharing one machine.
      '(b) a bare Hono echo (6,000/s) and (e) a bare forwarder (12,000/s) each fill the machine alone; one process doing both reaches at most 4,000/s = 4.00× the peer',
      // The gateway 0.95, the downstream 0.2 and PostgreSQL 0.4 of a core: 1.55 ÷ 1,800 and ÷ 1,000 tasks/s.
      'CPU a task of the gateway, its downstream and PostgreSQL: oncehook 0.86 ms, the peer 1.55 ms, so on the same busy cores 1.80×; 2× needs oncehook at 0.77 ms a task',
      // 32 clients ÷ 1,980 answers/s = 16.2 ms: under the line, so the tail is what is over it.
      '32 clients at 1,980 answers/s wait 16.2 ms on average; the tail sets the p99: p50 32.0 ms, p99 64.0 ms, p99.9 64.0 ms',
      'the machine 99 % busy: the gateway 95 % of a core, PostgreSQL 40 %',
    ]);
    expect(rows.get('2')!.why).toEqual([
      '(a) 2,000 tps, p50 15.0 ms a transaction; ingest 2,500 accepted/s, ack p50 15.0 ms',
      '(b) a bare Hono echo answered 6,000/s = 3.00× (a)',
      'the machine 90 % busy: the gateway 70 % of a core, PostgreSQL 40 %',
    ]);
    expect(rows.get('3')!.why).toEqual([
      '(e) a forwarder that records nothing: 12,000/s = 4.00× pg-boss; oncehook at 0.20× of it',
      'CPU a task of the worker, its downstream and PostgreSQL: oncehook 0.71 ms, pg-boss 0.57 ms, so on the same busy cores 0.80×; 1× needs oncehook at 0.57 ms a task',
      'the machine 90 % busy: the worker 80 % of a core, PostgreSQL 60 %',
    ]);
    // 1.1 of a core over a 500 ms burst of 1,000 requests: 550 µs each.
    expect(rows.get('4')!.why).toEqual([
      'the echo answered the burst at p99 200 ms, so the line is 300 ms; the gateway 110 % of a core over the burst, 550 µs of CPU a request',
      'the machine 90 % busy',
    ]);
  });

  it("names the rate as the p99's bound where the clients' mean wait is already over the line", () => {
    const all = results({ wholeJob: [500, 100, 80], ingest: [1, 1], pgbench: 1, forward: 1, pgboss: 1, storm: [1, 1] });
    const row = byId(targets(all, everyPhase)).get('1')!;
    expect(row.status).toBe('not met');
    // 32 clients ÷ 550 answers/s = 58.2 ms, and a p99 of 50 ms needs 32 ÷ 0.05 s = 640/s.
    expect(row.why).toEqual([
      '32 clients at 550 answers/s wait 58.2 ms on average, and a p99 is never under the mean: p99 ≤ 50 ms needs 640 answers/s or more',
      'the machine 99 % busy: the gateway 95 % of a core, PostgreSQL 40 %',
    ]);
  });

  it('says "not run" for a target whose phases --only left out, and which phases it needs', () => {
    const { 'whole-job': wholeJob } = results({ wholeJob: [1500, 1000, 30], ingest: [1, 1], pgbench: 1, forward: 1, pgboss: 1, storm: [1, 1] });
    const rows = targets({ 'whole-job': wholeJob }, only('whole-job'));
    expect(statuses(rows)).toEqual({ 1: 'not met', 2: 'not run', 3: 'not run', 4: 'not run', '5a': 'not run', '5b': 'not run', '5c': 'not run', '5d': 'not run', '5e': 'not run' });
    expect(byId(rows).get('2')!.why).toEqual(['needs pgbench, ingest']);
    expect(byId(rows).get('2')!.value).toBeNull();
    // Without (b) and (e) in the run, the bound names only what was measured.
    expect(byId(rows).get('1')!.why.some((line) => line.includes('bare'))).toBe(false);
    const table = renderTargets(rows).join('\n');
    expect(table).toMatch(/^2   receiving: ingest ÷ \(a\) pgbench ceiling +— +≥ 1\.5×, ack p99 ≤ 50 ms +not run$/m);
    expect(table).toMatch(/^ {6}why: needs pgbench, ingest$/m);
    expect(table).toMatch(/^ {6}bound: oncehook forwarded 1,500\/s/m);
  });

  it('tells a phase that failed from one not run, and a forwarding that measured nothing', () => {
    const all = results({ wholeJob: [1, 1, 1], ingest: [1, 1], pgbench: 1, forward: 1, pgboss: 1, storm: [1, 1] });
    const { ingest: _failed, ...rest } = all;
    const rows = byId(targets({ ...rest, forward: { measured: false, reason: 'the worker forwarded nothing in 45 s' } }, everyPhase));
    expect(rows.get('2')!.status).toBe('failed');
    expect(rows.get('2')!.why).toEqual(['phase ingest failed (see the notes at the top)']);
    expect(rows.get('3')!.status).toBe('not measured');
    expect(rows.get('5a')!.why).toEqual(['the worker forwarded nothing in 45 s']);
  });

  it("misses the embedded deployment's when what it accepted was not all forwarded within a minute", () => {
    const all = results({ wholeJob: [1, 1, 1], ingest: [1, 1], pgbench: 1, forward: 1, pgboss: 1, storm: [1, 1] });
    const row = byId(targets({ ...all, embedded: { ...all.embedded!, drainAfterMs: null } }, everyPhase)).get('5c')!;
    expect(row.status).toBe('not met');
    expect(row.measured).toBe('900 accepted/s, ack p99 90.0 ms, not all forwarded within a minute');
  });
});
