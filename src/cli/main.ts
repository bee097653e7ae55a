import { Command, Option } from 'commander';
import type { Role } from '../app.ts';
import type { Config } from '../config/schema.ts';
import { DEFAULT_LEASE_GRACE_MS, DEFAULT_SHUTDOWN_TIMEOUT_MS } from '../defaults.ts';
import { adminTokensFromEnv } from '../http/tokens.ts';
import { addAdminCommands } from './admin.ts';
import { addCopyDataCommand } from './copy-data.ts';
import { EXIT } from './client.ts';
import { oncehookProgram } from './program.ts';
import { foreignScheme, LOG_LEVELS, logLevel, POSTGRES_URL_FORM, urlOption, waitDuration, wholeNumber } from './options.ts';
import { StartFailure, starting } from './start-failure.ts';

// Each command imports what it runs when it runs: an admin command talks HTTP and must not wait for the
// gateway, the database drivers and the config schema to load, which were two thirds of its start
// (docs/performance-history.md).

const DEFAULT_CONFIG = './oncehook.config.json';
const DEFAULT_DATA_DIR = './.oncehook';

const port = wholeNumber(0, 65535, 'a port number from 0 to 65535');
const positive = wholeNumber(1, Infinity, 'a whole number of at least 1');
const milliseconds = wholeNumber(0, Infinity, 'a whole number of milliseconds');

/** The admin tokens; a malformed setting stops start-up in one line, which names the entry at fault and no token. */
function adminTokens() {
  try {
    return adminTokensFromEnv(process.env);
  } catch (error) {
    throw new StartFailure((error as Error).message);
  }
}

/**
 * DATABASE_URL, refused like a value on the command line (exit 2) when it names a scheme other than PostgreSQL's.
 * Only the scheme is said; the rest holds the password.
 */
function databaseUrl(): string | undefined {
  const url = process.env.DATABASE_URL;
  const scheme = url === undefined ? null : foreignScheme(url);
  if (scheme !== null) {
    program.error(`DATABASE_URL is a ${scheme}:// URL, not PostgreSQL's: write it as ${POSTGRES_URL_FORM}`, { exitCode: EXIT.usage });
  }
  return url;
}

function configOption() {
  return new Option('-c, --config <file>', 'the config file').env('ONCEHOOK_CONFIG').default(DEFAULT_CONFIG);
}

interface ServeOptions {
  config: string;
  port: number;
  host: string;
  role: Role;
  logLevel: string;
  leaseGraceMs: number;
  concurrency: number;
  shutdownTimeoutMs: number;
  dbWait: number;
  alertRoundMs: number | undefined;
  alertTimeoutMs: number | undefined;
}

const program = oncehookProgram();

program
  .command('serve', { isDefault: true })
  .description('receive webhooks and forward their tasks')
  .addOption(configOption())
  .addOption(new Option('-p, --port <n>', 'port to listen on').env('PORT').default(8080).argParser(port))
  .addOption(new Option('--host <address>', 'address to listen on').default('0.0.0.0'))
  .addOption(
    new Option('--role <role>', 'web: receive only; worker: forward only; all: both')
      .choices(['web', 'worker', 'all'])
      .env('ONCEHOOK_ROLE')
      .default('all'),
  )
  .addOption(new Option('--log-level <level>', `log lines of this level and more severe: ${LOG_LEVELS.join(', ')}`).argParser(logLevel).env('LOG_LEVEL').default('info'))
  .addOption(
    new Option('--lease-grace-ms <ms>', "how long past an action's timeoutMs a silent worker's lease is kept")
      .env('ONCEHOOK_LEASE_GRACE_MS')
      .default(DEFAULT_LEASE_GRACE_MS)
      .argParser(milliseconds),
  )
  .addOption(
    new Option('--concurrency <n>', 'attempts in flight at once in this worker (and connections per downstream origin)')
      .env('ONCEHOOK_CONCURRENCY')
      .default(64)
      .argParser(positive),
  )
  .addOption(
    new Option('--shutdown-timeout-ms <ms>', 'how long a SIGTERM waits for in-flight work before cutting it short and exiting')
      .env('ONCEHOOK_SHUTDOWN_TIMEOUT_MS')
      .default(DEFAULT_SHUTDOWN_TIMEOUT_MS)
      .argParser(milliseconds),
  )
  .addOption(
    new Option('--db-wait <duration>', 'how long a start waits for a PostgreSQL that is down or unreachable before failing (0: fail at once)')
      .env('ONCEHOOK_DB_WAIT')
      .default(60_000, '60s')
      .argParser(waitDuration),
  )
  // The e2e tests' knobs, kept out of the help: a round every few seconds and a ten-second alert request are right
  // for people, but a test of what a round makes, or of a killed alert request, would spend most of its time waiting.
  .addOption(new Option('--alert-round-ms <ms>', 'how often alert conditions are looked at').argParser(positive).hideHelp())
  .addOption(new Option('--alert-timeout-ms <ms>', 'how long an alert endpoint has to answer').argParser(positive).hideHelp())
  .action(async (options: ServeOptions) => {
    const [{ createLogger }, { loadConfig }, { startGateway }] = await Promise.all([
      import('../log.ts'),
      import('../config/load.ts'),
      import('../gateway.ts'),
    ]);
    const logger = createLogger(options.logLevel);
    const adminToken = adminTokens();
    const database = databaseUrl();
    if (options.role !== 'all' && !database) {
      // A web and a worker process, each on an embedded database of its own, would never see each other's tasks.
      program.error(`--role ${options.role} shares work with other processes only through PostgreSQL: set DATABASE_URL`, {
        exitCode: 2,
      });
    }
    if (options.leaseGraceMs > DEFAULT_LEASE_GRACE_MS) {
      logger.warn(
        { leaseGraceMs: options.leaseGraceMs },
        `--lease-grace-ms past ${DEFAULT_LEASE_GRACE_MS}: a dead worker's task may be reclaimed later than its timeoutMs plus 30 s`,
      );
    }
    const readConfig = () => {
      const { config, defaulted } = loadConfig(options.config);
      if (defaulted.length > 0) {
        logger.warn({ variables: defaulted }, `unset, using the defaults written in ${options.config}: set them in production`);
      }
      return config;
    };
    const config = readConfig();
    let gateway: Awaited<ReturnType<typeof startGateway>> | undefined;
    let stopping: string | null = null;
    // A SIGTERM while the start waits for the database ends the wait: there is nothing to shut down yet.
    const startAbort = new AbortController();
    const close = (started: NonNullable<typeof gateway>) =>
      started.close().then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    const stop = (signal: string) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now; attempts still in flight will be reconciled as outcome_unknown');
        process.exit(1);
      }
      stopping = signal;
      logger.info({ signal, timeoutMs: options.shutdownTimeoutMs }, gateway ? 'shutting down' : 'shutting down once started');
      // The last resort, should closing (or starting) hang (a database that stopped answering): what was not
      // recorded is in the database as a lease, which expires and is reconciled like a crash.
      setTimeout(() => {
        logger.error('shutdown did not finish within its timeout: exiting now');
        process.exit(1);
      }, options.shutdownTimeoutMs).unref();
      if (gateway) void close(gateway);
      else startAbort.abort();
    };
    // Before the start, which can take seconds (a new embedded directory, crash recovery): a signal then stops
    // the gateway cleanly once it is up — its lock released, exit 0 — rather than killing it mid-start.
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // A reload: the gateway says what came of it in the log. Node's default for SIGHUP would end the process.
    process.on('SIGHUP', () => {
      if (!gateway || stopping) return logger.warn({ signal: 'SIGHUP' }, 'not reloading: the gateway is not serving');
      gateway.reload().catch((error: unknown) => logger.error({ err: error }, 'the config reload failed; the running config stays'));
    });
    if (!database) {
      // Said before the embedded database takes its memory: a process killed for want of it says nothing after.
      const { memoryLimit, memoryShortfall } = await import('../store/memory-need.ts');
      const shortfall = memoryShortfall(memoryLimit());
      if (shortfall) logger.warn(shortfall);
    }
    // The launcher runs the sources only where the compiled build is missing or older than them: say so, for
    // that costs the start a compiler (about a second and 70 MiB).
    if (import.meta.url.endsWith('.ts')) logger.info('running the TypeScript sources through tsx: `npm run build` makes the compiled build, which runs while it is current');
    logger.info({ database: database ? 'postgres' : 'pglite' }, 'starting: opening the database and applying migrations');
    gateway = await starting(database, () =>
      startGateway({
        databaseWaitMs: database ? options.dbWait : 0,
        startAbort: startAbort.signal,
        config,
        logger,
        port: options.port,
        host: options.host,
        databaseUrl: database,
        dataDir: process.env.ONCEHOOK_DATA_DIR ?? DEFAULT_DATA_DIR,
        role: options.role,
        adminToken,
        forwarder: { leaseGraceMs: options.leaseGraceMs, concurrency: options.concurrency, alertTimeoutMs: options.alertTimeoutMs },
        shutdownTimeoutMs: options.shutdownTimeoutMs,
        alertRoundMs: options.alertRoundMs,
        reloadConfig: readConfig,
      }),
    ).catch((error: unknown) => {
      if (!stopping) throw error;
      logger.info({ signal: stopping }, 'stopped while waiting for the database');
      process.exit(0);
    });
    if (stopping) void close(gateway);
  });

program
  .command('migrate')
  .description('apply database migrations and exit (start-up also applies them)')
  .action(async () => {
    const [{ openStore }, { migrate }] = await Promise.all([import('../store/connect.ts'), import('../store/migrate.ts')]);
    const database = databaseUrl();
    const result = await starting(database, async () => {
      const store = await openStore({ databaseUrl: database, dataDir: process.env.ONCEHOOK_DATA_DIR ?? DEFAULT_DATA_DIR });
      try {
        return { kind: store.kind, ...(await migrate(store, database)) };
      } finally {
        await store.close();
      }
    });
    console.log(
      result.applied === 0
        ? `nothing to apply: the database has all ${result.total} migrations (${result.kind})`
        : `applied ${result.applied} migration${result.applied === 1 ? '' : 's'}; the database has ${result.total} (${result.kind})`,
    );
  });

addCopyDataCommand(program, DEFAULT_DATA_DIR);

program
  .command('check-config')
  .description('validate a config file and list every problem with its JSON path')
  .argument('[file]', 'the config file', process.env.ONCEHOOK_CONFIG ?? DEFAULT_CONFIG)
  .option('--json', 'print the result as JSON')
  .action(async (file: string, options: { json?: boolean }) => {
    const { ConfigError, loadConfig } = await import('../config/load.ts');
    try {
      const { config, defaulted } = loadConfig(file);
      const sources = Object.entries(config.sources).map(([id, source]) => ({
        id,
        adapter: source.adapter,
        actions: Object.keys(source.actions),
      }));
      if (options.json) console.log(JSON.stringify({ ok: true, file, sources, defaulted }));
      else {
        console.log(`${file}: ok`);
        if (defaulted.length > 0) console.log(`  unset, using the file's defaults: ${defaulted.join(', ')}`);
        for (const s of sources) console.log(`  ${s.id} (${s.adapter}) → ${s.actions.join(', ') || 'no actions'}`);
      }
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      if (options.json) console.log(JSON.stringify({ ok: false, file, problems: error.problems }));
      else console.error(error.message);
      process.exitCode = 1;
    }
  });

program
  .command('send-sample')
  .description('send a correctly signed sample delivery to a running gateway')
  .argument('<source>', 'a source id from the config')
  .addOption(configOption())
  .addOption(urlOption('the gateway'))
  .option('--event-id <id>', 'the event ID (default: random); send the same one twice to see deduplication')
  .option('--delivery-id <id>', 'the delivery ID (default: random)')
  .option('--topic <topic>', 'the topic (default: one the sender uses)')
  .option('--json', 'print only the gateway\'s JSON answer')
  .action(
    async (
      sourceId: string,
      options: { config: string; url: string; eventId?: string; deliveryId?: string; topic?: string; json?: boolean },
    ) => {
      const [{ ConfigError, loadConfig }, { buildSample, SampleError }] = await Promise.all([import('../config/load.ts'), import('./sample.ts')]);
      // The sample is signed with the source's secret from the config: that of the gateway it is sent to, which a
      // gateway served with --config does not keep in the default file.
      const sameConfig = 'send-sample signs with the config the gateway serves: pass the file it was started with, --config FILE or ONCEHOOK_CONFIG';
      let config: Config;
      try {
        ({ config } = loadConfig(options.config));
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        console.error(`${error.message}\n${sameConfig}`);
        process.exitCode = 1;
        return;
      }
      const source = config.sources[sourceId];
      if (!source) {
        console.error(`no source "${sourceId}" in ${options.config}; it has: ${Object.keys(config.sources).join(', ')}\n${sameConfig}`);
        process.exitCode = 2;
        return;
      }
      const target = new URL(`/in/${encodeURIComponent(sourceId)}`, options.url);
      let sample: ReturnType<typeof buildSample>;
      try {
        sample = buildSample(source, { ...options, path: target.pathname });
      } catch (error) {
        if (!(error instanceof SampleError)) throw error;
        console.error(error.message);
        process.exitCode = 2;
        return;
      }
      let response: Response;
      try {
        response = await fetch(target, { method: 'POST', headers: sample.headers, body: sample.body });
      } catch (error) {
        console.error(`cannot reach ${target}: ${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message}`);
        process.exitCode = 2;
        return;
      }
      const text = await response.text();
      if (options.json) console.log(text);
      else console.log(`POST ${target} → ${response.status}\n${JSON.stringify(JSON.parse(text), null, 2)}`);
      if (!response.ok) process.exitCode = 1;
    },
  );

// The CRM's options say "crm" in their names: the rest of the demo downstream wants no token, and `--token`
// elsewhere in this CLI is the admin API's.
program
  .command('demo-downstream')
  .description(
    'a tiny downstream for trying oncehook: records effects, honours Idempotency-Key, serves lookups, ' +
      'and serves a small CRM API under /crm/contacts (bearer token, validation, rate limit)',
  )
  .addOption(new Option('-p, --port <n>', 'port to listen on').default(9090).argParser(port))
  .addOption(new Option('--host <address>', 'address to listen on').default('127.0.0.1'))
  .addOption(new Option('--crm-token <token>', 'the bearer token /crm/contacts wants').env('CRM_TOKEN').default('demo-crm-token'))
  .addOption(new Option('--crm-rate <n>', 'requests a second /crm/contacts admits; the next is answered 429').default(5).argParser(positive))
  .action(async (options: { port: number; host: string; crmToken: string; crmRate: number }, command: Command) => {
    // Refused here, not by an argParser, whose message would print the value. An empty CRM_TOKEN, or one with a
    // space, could never be sent as `Bearer <token>`: every request would be a 401.
    if (!/^\S+$/.test(options.crmToken)) {
      command.error('error: --crm-token (or CRM_TOKEN) must be a token without spaces, such as demo-crm-token', { exitCode: EXIT.usage });
    }
    const { startDemoDownstream } = await import('./demo-downstream.ts');
    const crm = { token: options.crmToken, perSecond: options.crmRate };
    const { url } = await startDemoDownstream({ port: options.port, host: options.host, crm });
    // A token of one's own is named by where it came from, never printed; the default is no secret.
    const source = command.getOptionValueSource('crmToken');
    const token = source === 'default' ? `the default, ${crm.token}` : source === 'env' ? 'the one in CRM_TOKEN' : 'the one given by --crm-token';
    console.log(`demo downstream on ${url}: POST any path to make an effect; GET any path with ?key= to look one up`);
    console.log(
      `demo CRM on ${url}/crm/contacts: POST a contact, PUT /crm/contacts/{external_id}, GET ?external_id= to search;` +
        ` Authorization: Bearer <${token}>; ${crm.perSecond} requests a second`,
    );
  });

addAdminCommands(program);

program.parseAsync().catch(async (error: unknown) => {
  const [{ ConfigError }, { DataDirInUseError }] = await Promise.all([import('../config/load.ts'), import('../store/data-dir-lock.ts')]);
  if (error instanceof StartFailure) console.error(`oncehook: ${error.message}`);
  else if (error instanceof ConfigError || error instanceof DataDirInUseError) console.error(error.message);
  else console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
