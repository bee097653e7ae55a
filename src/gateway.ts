import { createAdapter } from '../adapters/index.ts';
import { SignatureFailureLog } from './alerts/signature-failures.ts';
import { startAlertWatcher } from './alerts/watcher.ts';
import type { Adapter } from '../adapters/types.ts';
import { appLasting, createApp, loadDashboard, type Role } from './app.ts';
import { SHORT_TOKEN, shortTokenLabels, type AdminTokenSetting } from './http/tokens.ts';
import { ConfigError } from './config/load.ts';
import type { Reload, ReloadOutcome } from './config/reload.ts';
import type { Config } from './config/schema.ts';
import { configVersion } from './config/version.ts';
import type { Logger } from './log.ts';
import { Forwarder, type ForwarderOptions } from './forward/forwarder.ts';
import { createMetrics } from './metrics.ts';
import { listen, stopping, type ListenerTimings } from './listener.ts';
import { startPurger, type Purger, type PurgerOptions } from './retention/purger.ts';
import { startEmbeddedUpkeep, type EmbeddedUpkeep } from './retention/embedded-upkeep.ts';
import { openStore, type Store } from './store/connect.ts';
import { migrate } from './store/migrate.ts';
import { RejectionLog } from './store/rejection-log.ts';
import { waitForDatabase } from './store/wait-for-database.ts';
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from './defaults.ts';
import { warmTransforms } from './shape/transform.ts';
import { startInstanceBeat, type InstanceBeat } from './store/instance-beat.ts';

export interface GatewayOptions {
  config: Config;
  logger: Logger;
  port: number;
  host?: string;
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  /** Tests only: an in-memory database's starting cluster (StoreOptions). */
  memoryImage?: Blob | undefined;
  /** `web` receives, `worker` forwards, `all` (the default) does both in one process. */
  role?: Role;
  adminToken?: AdminTokenSetting | undefined;
  forwarder?: Partial<ForwarderOptions>;
  retention?: PurgerOptions;
  /** How often alert conditions are looked at (tests look more often than the default few seconds). */
  alertRoundMs?: number;
  /** How often the deliveries answered 401 are counted in the database (tests: sooner than every few seconds). */
  signatureFlushMs?: number;
  /** How often the requests refused are added to the database's counts (tests: sooner than every few seconds). */
  rejectionFlushMs?: number;
  /**
   * How long a start waits for a PostgreSQL that is away (down, restarting, refusing) before it fails; 0, the
   * default, fails at the first try. `/healthz` answers meanwhile, `/readyz` and deliveries 503.
   */
  databaseWaitMs?: number;
  /** Aborted during the wait for the database: the start fails with the last try's error (a SIGTERM). */
  startAbort?: AbortSignal;
  /** How long `close` may take before it cuts in-flight work short (default 25 s, inside Fly's 30 s kill_timeout). */
  shutdownTimeoutMs?: number;
  /** Reads the config again for a reload (SIGHUP, `POST /api/config/reload`); throws a ConfigError for a bad one. */
  reloadConfig?: () => Config;
}

export interface Gateway {
  readonly url: string;
  readonly store: Store;
  /**
   * Stops gracefully: stops listening, answers requests on open connections 503 + Retry-After, lets the
   * deliveries and attempts in flight finish, and past `shutdownTimeoutMs` cuts the rest short (see
   * Forwarder.stop); then closes the database.
   */
  close(): Promise<void>;
  /** Reads the config file again and swaps it in (`reloadConfig`); without one, refuses. */
  reload: Reload;
}

/** What a config runs in a process: a reload replaces all of it. */
interface Running {
  config: Config;
  version: string;
  forwarder: Forwarder | null;
  purger: Purger | null;
  alerts: ReturnType<typeof startAlertWatcher> | null;
}

/** The server's own limits on a connection: a request is given the longest any source gives a body to arrive. */
const listenerTimings = (config: Config): ListenerTimings => ({
  longestReadMs: Math.max(...Object.values(config.sources).map((source) => source.readTimeoutMs)),
  keepAliveMs: config.limits.keepAliveMs,
});

/** Every action's timeout: a replaced forwarder's attempts end by the longest of them. */
const actionTimeouts = (config: Config) => Object.values(config.sources).flatMap((source) => Object.values(source.actions).map((action) => action.timeoutMs));

/** Past an attempt's own timeout, the time its finish needs to be recorded. */
const RETIRE_MARGIN_MS = 5_000;

/** Kept back from the shutdown budget: cut-short attempts must still be recorded and the database closed. */
function graceOf(timeoutMs: number): number {
  return Math.max(0, timeoutMs - Math.min(5000, timeoutMs / 5));
}

/** The longest a start waits for its transform process: a machine too busy to start one in this is not waited for. */
const TRANSFORM_START_WAIT_MS = 10_000;

/**
 * Binds the port, then opens the store, migrates it, and serves: a port that is taken stops the start before the
 * database is touched. A database that is away is waited for (`databaseWaitMs`), the port answering meanwhile.
 * Used by `oncehook serve` and by the tests that run it in-process.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger } = options;
  const role = options.role ?? 'all';
  const listener = await listen(options.port, options.host ?? '0.0.0.0', listenerTimings(config));
  // Started while the store opens, and waited for before the first delivery: a transform that waits for a process
  // to start may miss its delivery's deadline. A start that fails is the first transform's error to tell.
  const shaping = Object.values(config.sources).filter((source) => Object.values(source.actions).some((action) => action.transform !== undefined));
  const transformsStarted =
    role !== 'worker' && shaping.length > 0
      ? Promise.race([warmTransforms(shaping.length), new Promise((resolve) => setTimeout(resolve, TRANSFORM_START_WAIT_MS).unref())])
      : Promise.resolve();
  const store = await openStore({ databaseUrl: options.databaseUrl, dataDir: options.dataDir, memoryImage: options.memoryImage, logger }).catch(async (error: unknown) => {
    await listener.close();
    throw error;
  });
  // What a reload replaces: the config and everything made from it. The listener, the store, the metrics and the
  // parts of the app that count across configs (`lasting`) stay.
  let current: Running | null = null;
  let upkeep: EmbeddedUpkeep | null = null;
  let signatureFailures: SignatureFailureLog | null = null;
  let rejections: RejectionLog | null = null;
  /** Forwarders a reload replaced, still finishing their attempts in flight. */
  const retiring = new Set<Promise<void>>();
  let reloading: Promise<unknown> = Promise.resolve();
  let reloadGateway: Reload | undefined;
  let beat: InstanceBeat | null = null;
  try {
    // The migration is the first contact; the worker's LISTEN is the other step that needs the database, and a
    // restart can fall between them.
    const since = performance.now();
    const waited = (work: () => Promise<unknown>) =>
      waitForDatabase(work, {
        waitMs: options.databaseWaitMs ?? 0,
        logger,
        onWaiting: ({ reason }) => listener.waitingForDatabase(reason),
        signal: options.startAbort,
        since,
      });
    await waited(() => migrate(store, options.databaseUrl));
    const metrics = createMetrics();
    // A process of another role runs a worker, once it has started: until then it is not looking at the queue.
    const workerAlive = () => (role === 'web' ? undefined : (current?.forwarder?.alive() ?? false));
    signatureFailures = role === 'worker' ? null : new SignatureFailureLog(store, logger, config.limits.writeStallMs, options.signatureFlushMs);
    rejections = role === 'worker' ? null : new RejectionLog(store, logger, config.limits.writeStallMs, options.rejectionFlushMs);
    const lasting = appLasting(store, logger, metrics, () => current?.config ?? config);
    const appFor = (next: Config) =>
      createApp({
        config: next,
        adapters: new Map<string, Adapter>(Object.entries(next.sources).map(([id, source]) => [id, createAdapter(source)])),
        store,
        logger,
        metrics,
        role,
        adminToken: options.adminToken,
        workerAlive,
        signatureFailures,
        rejections,
        lasting,
        reload: options.reloadConfig ? reload : undefined,
      });
    const backgroundFor = (next: Config) => ({
      purger: role === 'web' ? null : startPurger(next, store, logger, options.retention),
      alerts: role === 'web' ? null : startAlertWatcher(next, store, logger, options.alertRoundMs),
    });
    const app = appFor(config);
    await transformsStarted;
    listener.answerWith(app.fetch);
    const worker = role === 'web' ? null : new Forwarder({ config, store, logger, metrics }, options.forwarder);
    current = { config, version: configVersion(config), forwarder: worker, purger: null, alerts: null };
    if (worker) await waited(() => worker.start());
    Object.assign(current, backgroundFor(config));
    upkeep = startEmbeddedUpkeep(store, logger, metrics);
    beat = startInstanceBeat(store, logger, role, () => current!.version);
    await beat.now().catch((error: unknown) => logger.debug({ err: error }, 'this instance could not say it is alive yet; the next beat tries again'));

    /**
     * The config is read again and, valid as a whole, swapped in between requests: a request already being answered
     * finishes under the config it began with, the next one meets the new config. The new forwarder claims from the
     * start while the old one finishes its attempts in flight (the database keeps them apart, as it keeps instances
     * apart). Reloads run one at a time.
     */
    async function swap(): Promise<{ outcome: ReloadOutcome; background?: Promise<unknown> }> {
      const began = performance.now();
      const was = current!;
      let next: Config;
      try {
        next = options.reloadConfig!();
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        logger.warn({ problems: error.problems, configVersion: was.version }, 'the config was not reloaded: the running one stays');
        return { outcome: { reloaded: false, configVersion: was.version, problems: error.problems } };
      }
      const forwarder = role === 'web' ? null : new Forwarder({ config: next, store, logger, metrics }, options.forwarder);
      await forwarder?.start();
      listener.setTimings(listenerTimings(next));
      listener.answerWith(appFor(next).fetch);
      const now: Running = { config: next, version: configVersion(next), forwarder, purger: null, alerts: null };
      current = now;
      if (was.forwarder) {
        // Its attempts end by their own timeouts; one still out past them is cut short, reconciled as at a stop.
        const stopping = was.forwarder
          .stop(Math.max(0, ...actionTimeouts(was.config)) + RETIRE_MARGIN_MS)
          .catch((error: unknown) => logger.error({ err: error }, 'the forwarder a reload replaced did not stop cleanly'))
          .finally(() => retiring.delete(stopping));
        retiring.add(stopping);
      }
      // Told before the answer, so that whoever reloaded sees this instance's new version at /api/instances at once.
      await beat?.now().catch((error: unknown) => logger.debug({ err: error }, 'the reloaded version could not be told yet; the next beat tells it'));
      logger.info({ configVersion: now.version, previousVersion: was.version, tookMs: Math.round(performance.now() - began) }, 'config reloaded');
      // The retention and alert rounds follow without holding up the answer: each first ends the pass it is in, which
      // on a large purge takes a while. The next reload, or a close, waits for them.
      const background = Promise.all([was.purger?.stop(), was.alerts?.stop()]).then(() => Object.assign(now, backgroundFor(next)));
      return { outcome: { reloaded: true, configVersion: now.version, previousVersion: was.version }, background };
    }
    function reload(): Promise<ReloadOutcome> {
      const turn = reloading.then(swap);
      // A failed swap is its caller's to tell; the rounds' restart has no caller but the log.
      reloading = turn.then(
        ({ background }) => background?.catch((error: unknown) => logger.error({ err: error }, 'the retention or alert rounds did not restart after a reload')),
        () => {},
      );
      return turn.then(({ outcome }) => outcome);
    }
    reloadGateway = reload;
  } catch (error) {
    await current?.alerts?.stop();
    await signatureFailures?.stop();
    await rejections?.stop();
    await listener.close();
    await store.close();
    throw error;
  }
  const { server } = listener;
  const { port, address } = listener.address;
  // Bound to every interface (the default), the address to reach it from this machine is the loopback one; the
  // log says so, since the admin API and the dashboard are then reachable from outside too.
  const everywhere = address === '0.0.0.0' || address === '::';
  const url = `http://${everywhere ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address}:${port}`;
  if (role !== 'worker' && !options.adminToken) logger.warn('the admin API is off: set ONCEHOOK_ADMIN_TOKEN to turn it on');
  const short = role === 'worker' || !options.adminToken ? [] : shortTokenLabels(options.adminToken);
  if (short.length > 0) {
    logger.warn(
      { labels: short },
      `admin tokens shorter than ${SHORT_TOKEN} characters (${short.join(', ')}) can be guessed by anyone who reaches /api or /ui: use random ones, e.g. openssl rand -hex 32`,
    );
  }
  const database = store.kind === 'pglite' ? `embedded PGlite in ${options.dataDir ?? 'memory'}` : 'PostgreSQL';
  logger.info(
    { port, host: address, role, database: store.kind, sources: Object.keys(config.sources) },
    `oncehook listening on ${url} (${everywhere ? `every interface, port ${port}; --host narrows it; ` : ''}${database})`,
  );
  // Now that deliveries are answered: a person's first page then need not wait for the dashboard's modules.
  if (role !== 'worker') loadDashboard().catch((error: unknown) => logger.error({ err: error }, 'the dashboard could not be loaded'));

  const running = current!;
  return {
    url,
    store,
    reload: () => (reloadGateway ? reloadGateway() : Promise.reject(new Error('this gateway was started without a config file to read again'))),
    async close() {
      listener.answerWith(stopping);
      const graceMs = graceOf(options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS);
      const listening = new Promise<void>((resolve) => server.close(() => resolve()));
      // A delivery still being read or recorded keeps its connection until it is answered; then the
      // connection is idle, and a keep-alive one would otherwise be held open for its whole timeout.
      const idle = setInterval(() => 'closeIdleConnections' in server && server.closeIdleConnections(), 50);
      const cut = setTimeout(() => 'closeAllConnections' in server && server.closeAllConnections(), graceMs);
      // A reload that has begun finishes first: what it starts is then stopped with the rest.
      await reloading;
      const { purger, alerts, forwarder } = current ?? running;
      await Promise.all([purger?.stop(), upkeep?.stop(), alerts?.stop(), forwarder?.stop(graceMs), ...retiring, listening]);
      await signatureFailures?.stop();
      await rejections?.stop();
      await beat?.stop();
      clearInterval(idle);
      clearTimeout(cut);
      await store.close();
    },
  };
}
