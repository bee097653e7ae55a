/**
 * What each feature of a source or an action costs, each measured against the same bench without it in the same
 * run, alternating: one table from the phases that price them (ingest-shaped, forward-ordered, forward-priced).
 * Pure: results in, lines out.
 */
import { int, times } from './format.ts';
import type { Results } from './phases/context.ts';
import { workerUsPerTask } from './phases/forward-priced.ts';
import type { ShapeName } from './phases/shaped-cost.ts';

interface Price {
  feature: string;
  phase: string;
  /** Accepted/s and forwarded/s ÷ without it; null where that side was not measured. */
  receiving: number | null;
  forwarding: number | null;
  /** CPU it adds: µs of the gateway's a delivery, or of the worker's a task. */
  cpu: string;
}

const added = (us: number | null, whose: string) => (us === null ? '' : `${us >= 0 ? '+' : '−'}${int(Math.abs(us))} µs of the ${whose}`);
const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

function prices(r: Results): Price[] {
  const rows: Price[] = [];
  const shaped = r['ingest-shaped']?.figures ?? [];
  const names: [ShapeName, string][] = [['filter', 'a filter'], ['filter + transform', 'a filter and a transform'], ['exposure limits', 'the exposure limits']];
  for (const [shape, feature] of names) {
    const f = shaped.find((s) => s.shape === shape);
    if (f?.vsPlain) rows.push({ feature, phase: 'ingest-shaped', receiving: f.vsPlain.acceptedPerSecond, forwarding: null, cpu: added(f.addedCpuUs, 'gateway a delivery') });
  }
  const ordered = r['forward-ordered'];
  if (ordered?.vsUnordered) {
    const cpu = (o: boolean) => mean(ordered.runs.filter((run) => run.ordered === o).flatMap((run) => workerUsPerTask(run.work) ?? []));
    const [on, off] = [cpu(true), cpu(false)];
    rows.push({ feature: 'order over 1,000 keys', phase: 'forward-ordered', receiving: null, forwarding: ordered.vsUnordered, cpu: added(on !== null && off !== null ? on - off : null, 'worker a task') });
  }
  const priced = r['forward-priced']?.figures ?? [];
  const plain = priced.find((f) => f.variant === 'plain');
  for (const f of priced) {
    if (!f.vsPlain || !plain) continue;
    const cpu = f.workerUsPerTask !== null && plain.workerUsPerTask !== null ? f.workerUsPerTask - plain.workerUsPerTask : null;
    rows.push({ feature: f.variant === 'URL template' ? 'a URL template' : 'an OAuth 2.0 token', phase: 'forward-priced', receiving: f.vsPlain.acceptedPerSecond, forwarding: f.vsPlain.forwardedPerSecond, cpu: added(cpu, 'worker a task') });
  }
  return rows;
}

/** The table printed after the ratios; nothing when no phase that prices a feature ran. */
export function renderPricing(r: Results): string[] {
  const rows = prices(r);
  if (rows.length === 0) return [];
  const head = ['what each feature costs', 'phase', 'receiving ÷ without', 'forwarding ÷ without', 'CPU it adds'];
  const cells = rows.map((p) => [p.feature, p.phase, p.receiving === null ? '—' : times(p.receiving), p.forwarding === null ? '—' : times(p.forwarding), p.cpu || '—']);
  const widths = head.map((_, i) => Math.max(...[head, ...cells].map((c) => c[i]!.length)));
  return ['', ...[head, ...cells].map((c) => c.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd())];
}
