import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/options.ts';
import type { Results } from '../../bench/phases/context.ts';
import { ratios, renderReport, type Environment } from '../../bench/report.ts';
import { loadResult as load } from '../support/bench-results.ts';

const env: Environment = { startedAt: '2026-12-01T00:00:00Z', node: 'v20', cores: 2, commit: 'abc', postgres: {}, notes: [] };

describe('bench report', () => {
  it("reads the storm's p99 beside the same burst against the bare echo, from the same run", () => {
    const results: Results = {
      http: { load: load(4), serverCpu: 0.9, storm: load(160), stormServerCpu: 0.7 },
      storm: { role: 'web', load: load(400), peakRssBytes: null, cpu: null, exactlyOneAccepted: true, tasksForTheEvent: 1 },
    };
    const byName = new Map(ratios(results).map((r) => [r.name, r]));
    expect(byName.get('storm p99')?.value).toBe(400);
    expect(byName.get('storm p99 ÷ (b) bare Hono storm p99')?.value).toBeCloseTo(2.5);
    const report = renderReport(env, parseOptions(['node', 'bench']), results);
    expect(report).toContain('storm (1000 at once): p50 80.0 ms  p99 160 ms');
    // Only the figures this run measured fill the table; the others are named once, not printed as n/a.
    expect(report).toMatch(/^storm p99 +400 ms$/m);
    expect(report).not.toMatch(/^ingest p99 ack/m);
    expect(report).toMatch(/^not measured in this run \(their phases did not run\): ingest \(accepted\/s\) ÷ \(a\) pgbench tps; /m);
  });

  it('says which gateway it measured, and prints the embedded phase with what was left to forward', () => {
    const results: Results = {
      embedded: {
        role: 'all',
        load: load(300, { acceptedPerSecond: 150 }),
        peakRssBytes: 370 * 2 ** 20,
        cpu: null,
        decisionsAsExpected: true,
        forwardedDuringLoad: 700,
        drainAfterMs: 1800,
      },
    };
    const built = renderReport(env, parseOptions(['node', 'bench']), results);
    expect(built).toContain('gateway production build');
    expect(built).toContain('oncehook on embedded PGlite  150 accepted/s');
    expect(built).toContain('700 of 900 by the end of the load, the rest 1.8 s after it');
    expect(renderReport(env, parseOptions(['node', 'bench', '--sources']), results)).toContain('gateway from the sources through tsx');
  });

  it('runs the soaks only when asked for, by flag or by name', () => {
    const phases = (...args: string[]) => parseOptions(['node', 'bench', ...args]).phases;
    expect(phases()).not.toContain('soak');
    expect(phases()).not.toContain('embedded-soak');
    expect(phases('--embedded-soak')).toContain('embedded-soak');
    expect(phases('--embedded-soak')).not.toContain('soak');
    expect(phases('--only', 'embedded-soak')).toEqual(['embedded-soak']);
    expect(phases('--only', 'ingest', '--soak')).toEqual(['ingest', 'soak']);
  });

  it("prints the embedded soak's upkeep passes of the first and the last fifth, so their growth shows", () => {
    const pass = (atSeconds: number, tasks: number) => ({ atSeconds, ms: { tasks, checkpoint: tasks / 4 } });
    const results: Results = {
      'embedded-soak': {
        load: load(40),
        ratePerSecond: 250,
        peakRssBytes: 400 * 2 ** 20,
        decisionsAsExpected: true,
        samples: [],
        baselineRssBytes: 360 * 2 ** 20,
        finalRssBytes: 378 * 2 ** 20,
        growth: 0.05,
        windows: [],
        upkeepPasses: [pass(30, 40), pass(60, 60), pass(120, 300), pass(570, 900), pass(600, 700)],
        dataBytes: 512 * 2 ** 20,
        forwardedDuringLoad: 900,
        drainAfterMs: 0,
      },
    };
    const report = renderReport(env, parseOptions(['node', 'bench', '--embedded-soak-seconds', '600']), results);
    expect(report).toContain('embedded soak (600 s at 250/s)  longest upkeep step 900 ms');
    expect(report).toContain("upkeep passes: 5; each step's median/longest ms in the first fifth: tasks 40/60, checkpoint 10/15");
    expect(report).toContain('in the last fifth: tasks 700/900, checkpoint 175/225');
    expect(report).toContain('900 tasks; data directory 512 MiB at the end');
  });

  it("reads both forwarders beside the ceiling of a sender that records nothing, from the same run", () => {
    const cpu = { processes: { worker: 0.8, downstream: 0.3 }, postgres: 0.6, machine: 0.9, cores: 2 };
    const ceiling = {
      completed: 90_000,
      perSecond: 9000,
      errors: 0,
      latencyMs: load(8).latencyMs,
      cpu: { processes: { sender: 0.97, downstream: 0.88 }, postgres: 0, machine: 0.94, cores: 2 },
    };
    const drain = (perSecond: number) => ({ backlog: 16_000, completed: 16_000, elapsedMs: 5000, perSecond, drained: true, downstreamReceived: 16_000, cpu });
    const results: Results = {
      pgboss: {
        version: '10.4.2',
        settings: { batchSize: 2000, workers: 4, pollingIntervalSeconds: 0.5, poolMax: 38 },
        send: { perSecond: 1400, latencyMs: load(50).latencyMs, errors: 0 },
        work: drain(3000),
        idleFirstForward: null,
      },
      'forward-ceiling': {
        runs: [
          { inFlight: 256, completed: 80_000, perSecond: 8000, errors: 0, latencyMs: load(46).latencyMs, cpu: null },
          { ...ceiling, inFlight: 32 },
        ],
        best: { ...ceiling, inFlight: 32 },
      },
      forward: {
        measured: true,
        fill: load(40),
        work: drain(2400),
        idleFirstForward: null,
        peakRssBytes: null,
        parts: [['the request: headers, URL, body', 1.25], ['the log line', 5]],
      },
    };
    const byName = new Map(ratios(results).map((r) => [r.name, r]));
    expect(byName.get('(e) forwarding ceiling ÷ (c) pg-boss')?.value).toBeCloseTo(3);
    expect(byName.get('forwarding ÷ (e) forwarding ceiling')?.value).toBeCloseTo(0.267, 3);
    expect(byName.get('forwarding ÷ (c) pg-boss work-and-forward')?.value).toBeCloseTo(0.8);
    const report = renderReport(env, parseOptions(['node', 'bench']), results);
    expect(report).toMatch(/^\(e\) forwarding ceiling \(bare undici\) +9,000 requests\/s$/m);
    expect(report).toContain('32 in flight on as many connections: 9,000/s, p50 4.00 ms  p99 8.00 ms, errors 0; CPU: sender 97 % of a core, downstream 88 %, machine 94 %');
    expect(report).toContain('256 in flight on as many connections: 8,000/s');
    expect(report).toMatch(/^\(e\) forwarding ceiling ÷ \(c\) pg-boss +3\.00×$/m);
    // 80 % of a core over 5 s for 16,000 tasks.
    expect(report).toContain('worker CPU a task: 250 µs; alone: the request: headers, URL, body 1.3, the log line 5.0 µs');
  });
});
