import { Command, InvalidArgumentError, Option } from 'commander';
import { LOG_LEVELS } from '../src/cli/options.ts';

/** Every phase, in the order a full run takes them. */
export const PHASES = ['pgbench', 'pgbench-notify', 'http', 'ingest', 'ingest-shaped', 'storm', 'pgboss', 'forward-ceiling', 'forward', 'forward-ordered', 'forward-priced', 'whole-job', 'embedded', 'growth', 'soak', 'embedded-soak', 'copy-data'] as const;
export type PhaseName = (typeof PHASES)[number];

export interface BenchOptions {
  concurrency: number;
  /** Seconds each phase measures, after its warm-up. */
  duration: number;
  warmup: number;
  duplicates: number;
  phases: PhaseName[];
  soakSeconds: number;
  embeddedSoakSeconds: number;
  /** Deliveries per second the embedded soak sends, new and replayed together. */
  embeddedSoakRate: number;
  /** Deliveries in the embedded data directory the copy-data phase copies. */
  copyDeliveries: number;
  /** Tasks of finished history the growth phase measures beside a fresh database. */
  tasks: number;
  json: boolean;
  cpuProf: boolean;
  pgUrl: string;
  bodyBytes: number;
  stormSize: number;
  bossBatchSize: number;
  bossWorkers: number;
  /** Attempts in flight in oncehook's worker (`serve --concurrency`). */
  workerConcurrency: number;
  /** `serve --concurrency` of oncehook in the whole job; unset, serve's own default, as `npm start` runs it. */
  wholeJobConcurrency?: number;
  presignRate: number;
  gatewayLogLevel: string;
  /** Run the gateway from the TypeScript sources through tsx instead of the production build. */
  sources: boolean;
  seed: number;
}

const number = (what: string, test: (n: number) => boolean) => (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || !test(n)) throw new InvalidArgumentError(what);
  return n;
};
const positiveInt = number('a positive integer', (n) => Number.isInteger(n) && n > 0);

function phaseList(value: string): PhaseName[] {
  const names = value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(PHASES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) {
    throw new InvalidArgumentError(`phases are ${PHASES.join(', ')}; got ${unknown.join(', ') || 'none'}`);
  }
  return names as PhaseName[];
}

export function parseOptions(argv: string[]): BenchOptions {
  const program = new Command('npm run bench --')
    .description(
      'Measures oncehook beside its ceilings in one run: pgbench (the durable-commit ceiling), a bare Hono echo ' +
        '(the HTTP ceiling), oncehook ingest, a duplicate storm, pg-boss, a bare undici sender (the forwarding ceiling), ' +
        'oncehook forwarding, and the whole job against a Hono + pg-boss gateway; prints the ratios and the targets.',
    )
    .addOption(new Option('--concurrency <n>', 'clients at once, in every phase').default(32).argParser(positiveInt))
    .addOption(new Option('--duration <seconds>', 'measured seconds per phase').default(15).argParser(positiveInt))
    .addOption(
      new Option('--warmup <seconds>', 'unmeasured seconds before each load phase')
        .default(2)
        .argParser(number('seconds ≥ 0', (n) => n >= 0)),
    )
    .addOption(
      new Option('--duplicates <share>', 'share of deliveries that are exact replays of earlier ones')
        .default(0.1)
        .argParser(number('a share from 0 to 1', (n) => n >= 0 && n < 1)),
    )
    .addOption(new Option('--only <phases>', `comma-separated, from: ${PHASES.join(', ')}`).argParser(phaseList))
    .addOption(new Option('--soak', 'also run the soak: ingest load for 5 minutes, reporting RSS drift'))
    .addOption(
      new Option('--soak-seconds <seconds>', 'length of the soak').default(300).argParser(positiveInt),
    )
    .addOption(
      new Option('--embedded-soak', "also run the embedded soak: npm start's deployment at a steady rate, watching PGlite's upkeep pauses"),
    )
    .addOption(
      new Option('--embedded-soak-seconds <seconds>', 'length of the embedded soak').default(1800).argParser(positiveInt),
    )
    .addOption(
      new Option('--embedded-soak-rate <n>', 'deliveries per second in the embedded soak').default(250).argParser(positiveInt),
    )
    .addOption(
      new Option('--copy-deliveries <n>', 'deliveries (each with its task and keys) in the data directory copy-data copies').default(100_000).argParser(positiveInt),
    )
    .addOption(
      new Option('--tasks <n>', 'tasks of finished history in the growth phase, built once and kept as a template database').default(10_000_000).argParser(positiveInt),
    )
    .addOption(new Option('--json', 'also write the figures to bench/results/<timestamp>.json'))
    .addOption(new Option('--cpu-prof', 'profile every gateway; profiles go to bench/results/<timestamp>-profiles/'))
    .addOption(
      new Option('--pg-url <url>', 'the PostgreSQL server; the bench creates and drops its own databases there')
        .env('ONCEHOOK_BENCH_PG')
        .default('postgres://postgres@127.0.0.1:5432/postgres'),
    )
    .addOption(new Option('--body-bytes <n>', 'size of each delivery body').default(500).argParser(positiveInt))
    .addOption(new Option('--storm-size <n>', 'identical deliveries in the storm').default(1000).argParser(positiveInt))
    .addOption(new Option('--boss-batch-size <n>', 'pg-boss jobs fetched per worker poll').default(2000).argParser(positiveInt))
    .addOption(new Option('--boss-workers <n>', 'pg-boss workers in its process').default(4).argParser(positiveInt))
    .addOption(
      new Option('--worker-concurrency <n>', "attempts in flight in oncehook's worker, its tuning as batchSize is pg-boss's")
        .default(256)
        .argParser(positiveInt),
    )
    .addOption(
      new Option('--whole-job-concurrency <n>', "attempts in flight in oncehook's whole job (default: serve's own, as npm start runs it)").argParser(positiveInt),
    )
    .addOption(
      new Option('--presign-rate <n>', 'deliveries signed ahead per measured second; more are signed on the fly')
        .default(15_000)
        .argParser(positiveInt),
    )
    .addOption(
      new Option('--gateway-log-level <level>', "the gateway's LOG_LEVEL (info logs a line per delivery, as deployed)")
        .default('info')
        .choices(LOG_LEVELS),
    )
    .addOption(
      new Option('--sources', 'run the gateway from the TypeScript sources through tsx, as `npm start` does, instead of the production build'),
    )
    .addOption(new Option('--seed <n>', 'seed of the duplicate mix').default(1).argParser(positiveInt))
    .showHelpAfterError();
  program.parse(argv);
  const { soak, embeddedSoak, only, ...o } = program.opts<
    Omit<BenchOptions, 'phases'> & { only?: PhaseName[]; soak?: boolean; embeddedSoak?: boolean }
  >();
  // The soaks take minutes: they run when asked for, by their flag or by name. So does copy-data, which measures no
  // ceiling and spends a minute recording the directory it copies.
  const asked: Partial<Record<PhaseName, boolean>> = { soak: Boolean(soak), 'embedded-soak': Boolean(embeddedSoak), 'copy-data': false };
  const chosen = only ?? PHASES.filter((p) => asked[p] ?? true);
  for (const p of PHASES) if (asked[p] && !chosen.includes(p)) chosen.push(p);
  return {
    ...o,
    json: Boolean(o.json),
    cpuProf: Boolean(o.cpuProf),
    sources: Boolean(o.sources),
    // Run in the canonical order whatever order --only named them: later ratios read earlier figures.
    phases: PHASES.filter((p) => chosen.includes(p)),
  };
}
