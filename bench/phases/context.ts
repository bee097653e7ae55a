import type { Cleanup } from '../cleanup.ts';
import type { LatencySummary } from '../histogram.ts';
import type { LoadResult } from '../load/protocol.ts';
import type { Progress } from '../load/run.ts';
import type { BenchOptions } from '../options.ts';
import type { CpuShares } from '../proc.ts';
import type { ForwardPricedResult } from './forward-priced.ts';
import type { GrowthResult } from './growth.ts';
import type { RssDrift } from './rss-drift.ts';
import type { ShapedRun, ShapeFigures } from './shaped-cost.ts';

export interface Context {
  readonly options: BenchOptions;
  readonly cleanup: Cleanup;
  /** A temporary directory for configs, scripts and logs, removed at the end. */
  readonly tmpDir: string;
  /** Where gateways write CPU profiles (`--cpu-prof`), or null. */
  readonly profileDir: string | null;
  /** Prints one progress line of the running phase. */
  say(line: string): void;
}

/** A progress line from the load generator, in one format for every phase. */
export function progressLine(p: Progress): string {
  // An interval in which nothing was answered has no p99 (NaN arrives over IPC as null): say so.
  const p99 = typeof p.p99Ms === 'number' && Number.isFinite(p.p99Ms) ? `${p.p99Ms.toFixed(1)} ms` : 'n/a (nothing answered)';
  return `${(p.elapsedMs / 1000).toFixed(0).padStart(4)} s  ${Math.round(p.perSecond).toLocaleString('en-US').padStart(7)}/s  p99 ${p99}  errors ${p.errors}`;
}

export interface PgbenchResult {
  tps: number;
  transactions: number;
  failed: number;
  /** Rows in `tasks` afterwards: equal to `transactions` when every key was new, as intended. */
  rowsInserted: number;
  latencyMs: LatencySummary | null;
  command: string;
}

export interface HttpResult {
  load: LoadResult;
  serverCpu: number | null;
  /** The duplicate storm's burst against the echo: what the machine allows before the gateway does any work. */
  storm: LoadResult;
  stormServerCpu: number | null;
}

export interface GatewayFigures {
  /** The role the gateway really ran; `all` means its forwarder ran beside ingest. */
  role: string;
  peakRssBytes: number | null;
  cpu: CpuShares | null;
}

export interface IngestResult extends GatewayFigures {
  load: LoadResult;
  /** Whether every new delivery was `accepted` and every replay a `duplicate_delivery`, and the rows agree. */
  decisionsAsExpected: boolean;
  tasksInDatabase: number;
}

/** The ingest load with the action plain, filtered, and filtered and transformed: each run, and each shape's means. */
export interface IngestShapedResult {
  runs: ShapedRun[];
  figures: ShapeFigures[];
}

/** `npm start`'s deployment: one process on embedded PGlite, receiving and forwarding. */
export interface EmbeddedResult extends GatewayFigures {
  load: LoadResult;
  /** Every new delivery `accepted`, every replay a `duplicate_delivery`, no errors. */
  decisionsAsExpected: boolean;
  /** Tasks the downstream had received when the load ended, and how long the rest took after it. */
  forwardedDuringLoad: number;
  drainAfterMs: number | null;
}

/** One gateway doing the whole job under the ingest load: receiving, and forwarding in the same process. */
export interface WholeJobRun {
  gateway: 'oncehook' | 'Hono + pg-boss';
  engine: 'PostgreSQL' | 'embedded PGlite';
  load: LoadResult;
  /** Requests the downstream received between the opening and the closing of the load's measured window. */
  forwardedInWindow: number;
  forwardedPerSecond: number;
  /** No errors, every new delivery accepted and every replay answered as a duplicate. */
  decisionsAsExpected: boolean;
  /** How long after the load the downstream had every accepted task; null when it had not within a minute. */
  drainAfterMs: number | null;
  /** The gateway and the downstream by name, PostgreSQL, the machine, over the measured window. */
  cpu: CpuShares | null;
  peakRssBytes: number | null;
}

/** The peer's tuning: pg-boss's batches and workers as in (c), and its forwarding connections. */
export interface PeerSettings {
  version: string;
  batchSize: number;
  workers: number;
  pollingIntervalSeconds: number;
  poolMax: number;
  connections: number;
}

/** oncehook doing the whole job on PostgreSQL, the Hono + pg-boss peer on the same load, and oncehook on PGlite. */
export interface WholeJobResult {
  oncehook: WholeJobRun;
  peer: WholeJobRun;
  embedded: WholeJobRun;
  peerSettings: PeerSettings;
  /** `serve --concurrency` of both oncehook runs; null: serve's own default. */
  concurrency: number | null;
}

export interface StormResult extends GatewayFigures {
  load: LoadResult;
  exactlyOneAccepted: boolean;
  tasksForTheEvent: number;
}

export interface DrainResult {
  backlog: number;
  completed: number;
  /** From the first request the downstream received to the moment the last completion was seen. */
  elapsedMs: number;
  perSecond: number;
  drained: boolean;
  downstreamReceived: number;
  /** CPU over the drain: the worker and the downstream by name, PostgreSQL, the machine. */
  cpu: CpuShares;
}

export interface IdleLatency {
  samplesMs: number[];
  p50: number;
  max: number;
}

export interface PgBossResult {
  version: string;
  settings: { batchSize: number; workers: number; pollingIntervalSeconds: number; poolMax: number };
  send: { perSecond: number; latencyMs: LatencySummary; errors: number };
  work: DrainResult;
  /** Null when the backlog never finished, so the queue was never idle. */
  idleFirstForward: IdleLatency | null;
}

/** One setting of (e): the same requests from a bare undici pool, no queue, no database. */
export interface CeilingRun {
  inFlight: number;
  completed: number;
  perSecond: number;
  errors: number;
  latencyMs: LatencySummary;
  /** The sender and the downstream by name, PostgreSQL (idle here), the machine. */
  cpu: CpuShares | null;
}

/** (e) At oncehook's worker concurrency and at pg-boss's pool size; the faster without a failed request is the ceiling. */
export interface ForwardCeilingResult {
  runs: CeilingRun[];
  best: CeilingRun;
}

export type ForwardResult =
  | { measured: false; reason: string }
  | {
      measured: true;
      fill: LoadResult;
      work: DrainResult;
      idleFirstForward: IdleLatency | null;
      peakRssBytes: number | null;
      /** Each part of a task's path through the worker alone, µs of CPU a task (worker-parts.ts); absent in older results. */
      parts?: [string, number][];
    };

export interface SoakResult extends RssDrift {
  load: LoadResult;
  peakRssBytes: number | null;
}

/** One pass of the embedded database's upkeep (vacuums, then a checkpoint), as the gateway logged it. */
export interface UpkeepPass {
  /** Seconds from the opening of the measured window to the end of the pass. */
  atSeconds: number;
  /** Milliseconds each step held the process: a table's vacuum, or `checkpoint`. */
  ms: Record<string, number>;
}

/** The longest single step of these passes (null for none): what a delivery arriving during it waited. */
export function longestStepMs(passes: UpkeepPass[]): number | null {
  return passes.length ? Math.max(...passes.flatMap((pass) => Object.values(pass.ms))) : null;
}

/** A progress window of the embedded soak. */
export interface SoakWindow {
  atSeconds: number;
  perSecond: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  rssBytes: number | null;
  /** PGlite's data directory on disk. */
  dataBytes: number;
  /** Tasks the downstream had received by then. */
  forwarded: number;
  upkeepPasses: number;
  /** The longest single step of those passes: what a delivery arriving during it waited. */
  longestStepMs: number | null;
  /** How long a Prometheus scrape of /metrics took, its task counts read from the database. */
  scrapeMs: number;
  /** The gateway's longest event-loop stall since the previous scrape, as its own metrics report it. */
  loopStallMs: number | null;
  /** PGlite's flushes to disk since the previous window, a second, and how long each held the process. */
  flushesPerSecond: number | null;
  flushMs: number | null;
}

/** `npm start`'s deployment held at a sender's steady rate for a long while: what the upkeep's pauses grow to. */
export interface EmbeddedSoakResult extends RssDrift {
  load: LoadResult;
  ratePerSecond: number;
  peakRssBytes: number | null;
  decisionsAsExpected: boolean;
  windows: SoakWindow[];
  upkeepPasses: UpkeepPass[];
  dataBytes: number;
  forwardedDuringLoad: number;
  drainAfterMs: number | null;
}

/** copy-data of a large embedded directory into PostgreSQL. */
export interface CopyDataResult {
  deliveries: number;
  /** The data directory on disk. */
  dataBytes: number;
  /** The command from start to exit, and the copy as it measured itself (from the lock to the analyze). */
  wallMs: number;
  copyMs: number;
  tables: { name: string; rows: number; ms: number }[];
  peakRssBytes: number | null;
}

/** (d″) (d)'s drain of the bench's action, and of the same with `order` over its orders' customers, alternating. */
export interface ForwardOrderedResult {
  runs: { ordered: boolean; backlog: number; work: DrainResult }[];
  /** The ordered runs' mean forwarded/s ÷ the unordered runs'; null unless both forwarded. */
  vsUnordered: number | null;
}

export interface Results {
  pgbench?: PgbenchResult;
  /** (a) with ingest's pg_notify in each transaction. */
  'pgbench-notify'?: PgbenchResult;
  http?: HttpResult;
  ingest?: IngestResult;
  'ingest-shaped'?: IngestShapedResult;
  storm?: StormResult;
  pgboss?: PgBossResult;
  'forward-ceiling'?: ForwardCeilingResult;
  forward?: ForwardResult;
  'forward-ordered'?: ForwardOrderedResult;
  'forward-priced'?: ForwardPricedResult;
  'whole-job'?: WholeJobResult;
  embedded?: EmbeddedResult;
  growth?: GrowthResult;
  soak?: SoakResult;
  'embedded-soak'?: EmbeddedSoakResult;
  'copy-data'?: CopyDataResult;
}
