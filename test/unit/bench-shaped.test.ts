import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../../adapters/index.ts';
import { signedDelivery, SOURCE } from '../../bench/deliveries.ts';
import { writeConfig } from '../../bench/gateway.ts';
import type { LoadResult } from '../../bench/load/protocol.ts';
import { parseOptions } from '../../bench/options.ts';
import type { Results } from '../../bench/phases/context.ts';
import { cpuUsPerDelivery, runOrder, SHAPE_NAMES, SHAPES, shapedFigures, type ShapedRun, type ShapeName } from '../../bench/phases/shaped-cost.ts';
import { ratios, renderReport, type Environment } from '../../bench/report.ts';
import { loadConfig } from '../../src/config/load.ts';
import { planTasks } from '../../src/ingest/plan-tasks.ts';
import { Transforms } from '../../src/shape/transforms.ts';

const dir = mkdtempSync(join(tmpdir(), 'oncehook-bench-shaped-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Plans one of the load generator's deliveries as the gateway would with the config the phase writes for `shape`. */
async function planBenchDelivery(shape: ShapeName) {
  const { config } = loadConfig(writeConfig(dir, 'http://127.0.0.1:9', SHAPES[shape], shape.replace(/\W+/g, '-')));
  const source = config.sources[SOURCE]!;
  const { headers: pairs, body } = signedDelivery({ eventId: 'run-7', bytes: 500 });
  const headers = new Headers();
  for (let i = 0; i < pairs.length; i += 2) headers.set(pairs[i]!, pairs[i + 1]!);
  const identity = createAdapter(source).verify({ headers, body, now: new Date('2026-01-01T17:00:01Z') });
  return planTasks(SOURCE, source, { identity, headers: Object.fromEntries(headers) }, headers, new Transforms(config));
}

describe("the ingest-shaped phase's shapes", () => {
  it('admit every delivery the load generator sends, so the three runs make the same tasks', async () => {
    for (const shape of SHAPE_NAMES) {
      const plan = await planBenchDelivery(shape);
      expect(plan.skipped, shape).toEqual([]);
      expect(plan.tasks, shape).toHaveLength(1);
      expect(plan.tasks[0]!.state, shape).toBe('pending');
    }
  });

  it("shape the CRM body only where there is a transform, with the task's ID as the phase counts it", async () => {
    expect((await planBenchDelivery('filter')).tasks[0]!.shaped).toBeUndefined();
    const [task] = (await planBenchDelivery('filter + transform')).tasks;
    const body = JSON.parse(new TextDecoder().decode(task!.shaped!.body)) as Record<string, unknown>;
    expect(body).toEqual({ email: 'jon@example.com', external_id: task!.id, order_id: 'run-7', total: 199.65, currency: 'USD', skus: ['IPOD-342-N'] });
  });

  it('alternate, so every shape sits at the same mean place in the run', () => {
    expect(runOrder(2)).toEqual(['plain', 'filter', 'filter + transform', 'exposure limits', 'exposure limits', 'filter + transform', 'filter', 'plain']);
    const place = (shape: ShapeName) => runOrder(2).flatMap((s, i) => (s === shape ? [i] : [])).reduce((a, b) => a + b, 0);
    expect(new Set(SHAPE_NAMES.map(place)).size).toBe(1);
  });
});

function load(acceptedPerSecond: number, p50: number, p99: number): LoadResult {
  return {
    label: 'x',
    completed: acceptedPerSecond * 10,
    windowMs: 10_000,
    perSecond: acceptedPerSecond * 1.1,
    acceptedPerSecond,
    statuses: { 200: acceptedPerSecond * 11 },
    decisions: { accepted: acceptedPerSecond * 10, duplicate_delivery: acceptedPerSecond },
    sent: { unique: acceptedPerSecond * 10, duplicates: acceptedPerSecond },
    signedDuringRun: 0,
    errors: 0,
    firstError: null,
    latencyMs: { count: 1, mean: p50, p50, p90: p99, p99, p999: p99, max: p99 },
    generatorCpu: 0.2,
  };
}

/** A run whose gateway used `gatewayShare` of a core while answering 1.1 × `accepted` deliveries a second. */
function run(shape: ShapeName, accepted: number, p50: number, p99: number, gatewayShare: number): ShapedRun {
  return {
    shape,
    load: load(accepted, p50, p99),
    cpu: { processes: { gateway: gatewayShare }, postgres: 0.4, machine: 0.8, cores: 2 },
    peakRssBytes: null,
    decisionsAsExpected: true,
    tasksInDatabase: accepted * 10,
    shapedTasks: shape === 'filter + transform' ? accepted * 10 : 0,
  };
}

describe("the ingest-shaped phase's figures", () => {
  // Answered/s is 1.1 × accepted/s: 1,100 answered at 22 % of a core is 200 µs per delivery.
  const runs = [
    run('plain', 1000, 10, 40, 0.22),
    run('filter', 1000, 10, 40, 0.231),
    run('filter + transform', 800, 12, 50, 0.352),
    run('filter + transform', 800, 14, 70, 0.352),
    run('filter', 1000, 10, 40, 0.231),
    run('plain', 1200, 10, 40, 0.264),
  ];

  it("reads a run's gateway CPU per answered delivery", () => {
    expect(cpuUsPerDelivery(runs[0]!)).toBeCloseTo(200);
    expect(cpuUsPerDelivery({ ...runs[0]!, cpu: null })).toBeNull();
  });

  it('averages each shape over its runs and reads it against plain, with the CPU each adds', () => {
    const [plain, filter, both] = shapedFigures(runs);
    expect(plain).toMatchObject({ shape: 'plain', runs: 2, acceptedPerSecond: 1100, vsPlain: null, addedCpuUs: null });
    expect(plain!.cpuUsPerDelivery).toBeCloseTo(200);
    expect(filter!.vsPlain!.acceptedPerSecond).toBeCloseTo(1000 / 1100);
    expect(filter!.addedCpuUs).toBeCloseTo(10);
    expect(both).toMatchObject({ shape: 'filter + transform', runs: 2, acceptedPerSecond: 800, p50Ms: 13, p99Ms: 60 });
    expect(both!.cpuUsPerDelivery).toBeCloseTo(400);
    expect(both!.vsPlain).toMatchObject({ p50Ms: 1.3, p99Ms: 1.5 });
    expect(both!.vsPlain!.cpuUsPerDelivery).toBeCloseTo(2);
    expect(both!.addedCpuUs).toBeCloseTo(200);
  });

  it('compares nothing when plain was not measured, and leaves unmeasured CPU out rather than as zero', () => {
    expect(shapedFigures(runs.filter((r) => r.shape !== 'plain')).every((f) => f.vsPlain === null)).toBe(true);
    const [, filter] = shapedFigures(runs.map((r) => (r.shape === 'filter' ? { ...r, cpu: null } : r)));
    expect(filter).toMatchObject({ cpuUsPerDelivery: null, addedCpuUs: null });
    expect(filter!.vsPlain!.cpuUsPerDelivery).toBeNull();
  });

  it('prints each shape beside plain and every run, and puts the ratios in the table', () => {
    const results: Results = { 'ingest-shaped': { runs, figures: shapedFigures(runs) } };
    const env: Environment = { startedAt: '2026-12-03T00:00:00Z', node: 'v20', cores: 2, commit: 'abc', postgres: {}, notes: [] };
    const report = renderReport(env, parseOptions(['node', 'bench', '--only', 'ingest-shaped']), results);
    expect(report).toMatch(/^\(d′\) ingest, the action filtered and transformed; the exposure limits +0\.73× accepted\/s of plain$/m);
    expect(report).toContain('plain: 1,100 accepted/s, ack p50 10.0 ms  p99 40.0 ms, gateway CPU 200 µs per delivery');
    expect(report).toContain(
      'filter + transform: 800 accepted/s (0.73×), ack p50 13.0 ms (1.30×)  p99 60.0 ms (1.50×), gateway CPU 400 µs per delivery (2.00×, +200 µs)',
    );
    expect(report).toContain('run 3, filter + transform: 800 accepted/s, p50 12.0 ms  p99 50.0 ms, errors 0, as expected: yes; gateway 35 % of a core (400 µs per delivery)');
    const byName = new Map(ratios(results).map((r) => [r.name, r.value]));
    expect(byName.get('(d′) ingest with a filter and a transform ÷ without (accepted/s)')).toBeCloseTo(0.727, 3);
    expect(byName.get('(d′) gateway CPU per delivery, filter and transform ÷ without')).toBeCloseTo(2);
    expect(parseOptions(['node', 'bench', '--only', 'ingest-shaped']).phases).toEqual(['ingest-shaped']);
  });

  it('prices each shape in the table of what each feature costs', () => {
    const limited = [...runs, run('exposure limits', 1045, 10, 40, 0.23)];
    const env: Environment = { startedAt: '2026-12-03T00:00:00Z', node: 'v20', cores: 2, commit: 'abc', postgres: {}, notes: [] };
    const report = renderReport(env, parseOptions(['node', 'bench', '--only', 'ingest-shaped']), { 'ingest-shaped': { runs: limited, figures: shapedFigures(limited) } });
    expect(report).toMatch(/^what each feature costs +phase +receiving ÷ without +forwarding ÷ without +CPU it adds$/m);
    expect(report).toMatch(/^a filter and a transform +ingest-shaped +0\.73× +— +\+200 µs of the gateway a delivery$/m);
    expect(report).toMatch(/^the exposure limits +ingest-shaped +0\.95× +— +\+0 µs of the gateway a delivery$/m);
  });
});
