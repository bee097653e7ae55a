/**
 * What an action's `filter` and `transform` cost at ingest: the ingest load against the bench's usual
 * action, against the same action with a filter every delivery passes, and with that filter and a transform shaping
 * a CRM body. Pure: the shapes, the order the runs take, and how the runs are read against each other.
 */
import type { LoadResult } from '../load/protocol.ts';
import type { CpuShares } from '../proc.ts';

/** What the bench's one source and action do besides verifying a delivery and sending its task (gateway.ts writeConfig). */
export interface ActionShape {
  filter?: Record<string, unknown>;
  transform?: string;
  order?: { key: string; by?: string; mode: 'sequence' | 'latest' };
  /** The action's URL after the downstream's origin, placeholders and all; `/crm` when unset. */
  urlPath?: string;
  /** A token from the downstream's client-credentials endpoint, sent with every attempt. */
  oauth2?: true;
  /**
   * The public endpoint's limits on a client at their defaults, and a source rate limit no delivery reaches, where
   * the bench otherwise raises them out of the storm's way: each delivery meets them, and none is refused.
   */
  exposureLimits?: true;
}

export const SHAPE_NAMES = ['plain', 'filter', 'filter + transform', 'exposure limits'] as const;
export type ShapeName = (typeof SHAPE_NAMES)[number];

// Every delivery the load generator sends (bench/deliveries.ts orderBody) has these fields, so every one passes and
// the three runs make the same tasks: the filter is decided in full, never cut short by a field that is missing.
const FILTER = { body: { total_price: { $exist: true }, financial_status: 'paid' } };
// The docs' CRM shape, fitted to the bench's order (its customer is an ID alone): five fields read, one of them through an
// array, one number converted, the task ID bound. Its cost is the sandboxed evaluation, not the expression's few steps.
const TRANSFORM = '{"email": email, "external_id": $taskId, "order_id": id, "total": $number(total_price), "currency": currency, "skus": line_items[].sku}';

export const SHAPES: Record<ShapeName, ActionShape> = {
  plain: {},
  filter: { filter: FILTER },
  'filter + transform': { filter: FILTER, transform: TRANSFORM },
  'exposure limits': { exposureLimits: true },
};

/**
 * The runs in the order they are taken: each round names every shape once, every other round backwards (plain,
 * filter, …, …, filter, plain), so a machine that speeds up or slows down over the
 * phase weighs on every shape alike.
 */
export function runOrder(rounds: number): ShapeName[] {
  const order: ShapeName[] = [];
  for (let round = 0; round < rounds; round++) order.push(...(round % 2 === 0 ? SHAPE_NAMES : [...SHAPE_NAMES].reverse()));
  return order;
}

/** One load against one gateway on its own fresh database. */
export interface ShapedRun {
  shape: ShapeName;
  load: LoadResult;
  cpu: CpuShares | null;
  peakRssBytes: number | null;
  /** Every new delivery `accepted`, every replay a duplicate, a task per accepted delivery, each shaped if it should be. */
  decisionsAsExpected: boolean;
  tasksInDatabase: number;
  /** Tasks whose body the transform made (it carries `external_id`). */
  shapedTasks: number;
}

export interface ShapeFigures {
  shape: ShapeName;
  runs: number;
  /** Means over the shape's runs. */
  acceptedPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** The gateway's CPU per answered delivery, in µs; null when a run's CPU was not measured. */
  cpuUsPerDelivery: number | null;
  /** Each figure ÷ plain's; null for plain itself, or when plain was not measured. */
  vsPlain: { acceptedPerSecond: number; p50Ms: number; p99Ms: number; cpuUsPerDelivery: number | null } | null;
  /** CPU per delivery beyond plain's, in µs: what the filter, or the filter and the transform, add. */
  addedCpuUs: number | null;
}

/** The gateway's CPU per answered delivery in µs: its share of a core ÷ answered per second. */
export function cpuUsPerDelivery(run: Pick<ShapedRun, 'cpu' | 'load'>): number | null {
  const share = run.cpu?.processes.gateway;
  return share === undefined || run.load.perSecond <= 0 ? null : (share / run.load.perSecond) * 1e6;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** Each shape's runs averaged, and read against plain's. Shapes without runs are left out. */
export function shapedFigures(runs: ShapedRun[]): ShapeFigures[] {
  const figures = SHAPE_NAMES.flatMap((shape): Omit<ShapeFigures, 'vsPlain' | 'addedCpuUs'>[] => {
    const mine = runs.filter((run) => run.shape === shape);
    if (mine.length === 0) return [];
    const cpus = mine.map(cpuUsPerDelivery);
    return [{
      shape,
      runs: mine.length,
      acceptedPerSecond: mean(mine.map((run) => run.load.acceptedPerSecond)),
      p50Ms: mean(mine.map((run) => run.load.latencyMs.p50)),
      p99Ms: mean(mine.map((run) => run.load.latencyMs.p99)),
      cpuUsPerDelivery: cpus.every((cpu) => cpu !== null) ? mean(cpus as number[]) : null,
    }];
  });
  const plain = figures.find((f) => f.shape === 'plain');
  return figures.map((f) => {
    if (!plain || f === plain) return { ...f, vsPlain: null, addedCpuUs: null };
    const cpuBoth = f.cpuUsPerDelivery !== null && plain.cpuUsPerDelivery !== null;
    return {
      ...f,
      vsPlain: {
        acceptedPerSecond: f.acceptedPerSecond / plain.acceptedPerSecond,
        p50Ms: f.p50Ms / plain.p50Ms,
        p99Ms: f.p99Ms / plain.p99Ms,
        cpuUsPerDelivery: cpuBoth ? f.cpuUsPerDelivery! / plain.cpuUsPerDelivery! : null,
      },
      addedCpuUs: cpuBoth ? f.cpuUsPerDelivery! - plain.cpuUsPerDelivery! : null,
    };
  });
}
