import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnProcess, type Child } from './children.ts';
import type { Cleanup } from './cleanup.ts';
import { BENCH_SECRET, SOURCE } from './deliveries.ts';
import { TOKEN_PATH } from './servers/protocol.ts';
import type { ActionShape } from './phases/shaped-cost.ts';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** Picks the sources through tsx when tsx is installed, as `npm start` does. */
const BIN = join(REPO, 'bin', 'oncehook.js');
/** What a deployment runs: `npm run build`'s output. */
const BUILT = join(REPO, 'dist', 'src', 'cli', 'main.js');

/** The `oncehook` a bench runs: the build (see buildGateway), or the sources through tsx with `--sources`. */
export const oncehookScript = (sources: boolean) => (sources ? BIN : BUILT);

/**
 * Builds the production output the gateways run. Measured against the same gateway run through tsx (which
 * keeps every function's name by wrapping each closure as it is made), the build is what deploys and what
 * the figures should describe.
 */
export function buildGateway(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] });
}

export type Role = 'web' | 'worker' | 'all';

export interface RunningGateway {
  readonly url: string;
  readonly child: Child;
  /** The role it really runs: `all` when the CLI cannot be told another. */
  readonly role: Role;
  readonly logFile: string;
  stop(): Promise<void>;
}

/**
 * The config every bench gateway runs: one Shopify source signed with the bench's secret and one keyed
 * action on the local downstream. `maxInFlight` is raised past the storm's 1000 so the storm measures
 * deduplication; at the default 256 admission control would answer most of it 503 before it reached the database.
 * `maxBodiesReading` likewise: a loaded machine can catch more than the default 64 of the storm's bodies mid-read.
 * `shape` gives the action a filter or a transform (the `ingest-shaped` phase); `name` keeps such configs apart.
 */
export function writeConfig(dir: string, downstreamOrigin: string, shape: ActionShape = {}, name = 'bench'): string {
  const file = join(dir, `oncehook.${name}.json`);
  const { urlPath = '/crm', oauth2, exposureLimits, ...action } = shape;
  const auth = oauth2 ? { oauth2: { tokenUrl: `${downstreamOrigin}${TOKEN_PATH}`, clientId: 'bench', clientSecret: 'bench-client-secret' } } : undefined;
  const config = {
    sources: {
      [SOURCE]: {
        adapter: 'shopify',
        secrets: [BENCH_SECRET],
        actions: { crm: { url: `${downstreamOrigin}${urlPath}`, idempotency: 'key', auth, ...action } },
        ...(exposureLimits ? { rateLimit: { perSecond: 1_000_000 } } : { maxBodiesReading: 2048 }),
      },
    },
    limits: exposureLimits ? {} : { maxInFlight: 2048 },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * Starts the real binary — `node dist/src/cli/main.js serve`, or `node bin/oncehook.js serve` with `--sources` — on a free port. Its log goes to a file, not to a
 * pipe this process would have to drain: a slow reader must never stall the gateway it measures. The bench
 * picks the port and waits for /readyz, so any `--gateway-log-level` works, `warn` included. Not /healthz: the port
 * is bound before the database opens, and /healthz answers while it does (embedded PGlite holds the process for
 * seconds then: a load started on /healthz measured that wait as ack latency, p99.9 3.7 s).
 */
export async function startGateway(options: {
  name: string;
  configFile: string;
  /** A PostgreSQL database, or null for embedded PGlite in `dataDir`, as `npm start` runs. */
  databaseUrl: string | null;
  dataDir?: string;
  role: Role;
  logFile: string;
  logLevel: string;
  /** `serve --concurrency`: attempts in flight when the role forwards; the gateway's default when unset. */
  concurrency?: number;
  /** Where Node writes the gateway's CPU profile when it exits; none when unset. */
  profileDir?: string | null;
  /** Through tsx from the sources instead of the build (see buildGateway). */
  sources: boolean;
  /** Turns the admin API and the dashboard on with this token (`ONCEHOOK_ADMIN_TOKEN`); off when unset. */
  adminToken?: string | undefined;
  cleanup: Cleanup;
}): Promise<RunningGateway> {
  const { role } = options;
  const profile = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : [];
  const port = await unusedPort();
  const args = [...profile, oncehookScript(options.sources), 'serve', '--port', String(port), '--host', '127.0.0.1', '--config', options.configFile];
  args.push('--role', role);
  if (options.concurrency !== undefined && role !== 'web') args.push('--concurrency', String(options.concurrency));
  // The gateway runs as the bench says, whatever ONCEHOOK_* settings the shell that started the bench has.
  const scrubbed = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('ONCEHOOK_')).map((k) => [k, undefined]));
  const log = openSync(options.logFile, 'a');
  let child: Child;
  try {
    child = spawnProcess(options.name, process.execPath, args, options.cleanup, {
      cwd: REPO,
      env: {
        ...scrubbed,
        DATABASE_URL: options.databaseUrl ?? undefined,
        ONCEHOOK_DATA_DIR: options.dataDir,
        ONCEHOOK_ADMIN_TOKEN: options.adminToken,
        LOG_LEVEL: options.logLevel,
        PORT: undefined,
      },
      stdio: ['ignore', log, log],
    });
  } finally {
    closeSync(log);
  }
  const url = `http://127.0.0.1:${port}`;
  await ready(child, url, options.logFile);
  return { url, child, role, logFile: options.logFile, stop: () => child.stop(10_000) };
}

/** A port nothing listens on now; the gateway takes it a moment later. */
async function unusedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function ready(child: Child, url: string, logFile: string): Promise<void> {
  const deadline = performance.now() + 30_000;
  let gone = false;
  void child.exited.then(() => (gone = true));
  for (;;) {
    const answered = await fetch(`${url}/readyz`).then((response) => response.ok, () => false);
    if (answered) return;
    if (gone || performance.now() > deadline) {
      await child.stop();
      const log = readFileSync(logFile, 'utf8');
      throw new Error(`${child.name} ${gone ? 'exited' : 'was not ready (/readyz) within 30 s'}; its log:\n${log.slice(-3000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
