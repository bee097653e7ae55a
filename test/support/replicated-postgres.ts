import { appendFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { freePort } from './free-port.ts';
import { asOwner, clusterDir } from './postgres-tools.ts';

/**
 * A primary and a hot standby made with PostgreSQL's own tools (initdb, pg_basebackup, pg_ctl) in a temporary
 * directory, on free ports: what a failover test needs and CI's machine has, with nothing installed.
 *
 * The standby streams from the primary through a link of this module's own, which delays every byte by
 * `linkDelayMs` each way and dies with the primary: a standby in another zone or region, whose WAL in flight is
 * lost with the primary's machine. Synchronous, the primary's commits wait for the standby to have that WAL on
 * disk (`synchronous_commit = on`); asynchronous, they do not, and what the link still carried is gone.
 */
export interface ReplicatedPostgres {
  /** Both servers, the primary first: the URL a gateway is given. */
  readonly url: string;
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  /** `sync` or `async`, as the primary's pg_stat_replication says once the standby has caught up. */
  readonly mode: Replication;
  /**
   * The replication link carries nothing more, either way, until the primary dies: the standby falls behind from
   * now. Synchronous, no commit can be acknowledged meanwhile; asynchronous, every commit from now is one the
   * standby will not have.
   */
  stallLink(): void;
  /** kill -9 of every process of the primary, and its end of the replication link: its machine died. */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote`: the standby becomes a primary, after replaying every WAL record it received. */
  promote(): Promise<void>;
  /** What each server logged so far (the last 20,000 characters of each): to see why a run failed. */
  logs(): string;
  destroy(): Promise<void>;
}

export type Replication = 'sync' | 'async';

export interface ReplicatedOptions {
  replication: Replication;
  /** One-way delay of the replication link (default 0). */
  linkDelayMs?: number;
}

/** What settings both servers share: durability matters here only across a killed process, not a lost machine. */
const COMMON = ["listen_addresses = '127.0.0.1'", 'fsync = off', 'full_page_writes = off', 'max_connections = 60'];

export async function startReplicatedPostgres(options: ReplicatedOptions): Promise<ReplicatedPostgres> {
  const dir = await clusterDir('oncehook-failover-');
  const primaryData = join(dir, 'primary');
  const standbyData = join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const pgCtl = (data: string, ...args: string[]) => asOwner('pg_ctl', ['-D', data, '-l', `${data}.log`, ...args]);
  const url = (...ports: number[]) => `postgres://postgres@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/postgres`;

  let link: DelayLink | undefined;
  let primaryStarted = false;
  let standbyStarted = false;
  // A test process that dies leaves no server behind: an immediate shutdown (SIGQUIT) of each still running.
  const onExit = () => {
    for (const [data, started] of [[primaryData, primaryStarted], [standbyData, standbyStarted]] as const) {
      try {
        if (started) process.kill(Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGQUIT');
      } catch {
        // not running
      }
    }
  };
  process.once('exit', onExit);
  const stopBoth = async () => {
    process.off('exit', onExit);
    link?.close();
    if (primaryStarted) await pgCtl(primaryData, '-m', 'immediate', '-w', 'stop').catch(() => {});
    if (standbyStarted) await pgCtl(standbyData, '-m', 'immediate', '-w', 'stop').catch(() => {});
  };
  try {
    await asOwner('initdb', ['-D', primaryData, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
    // Written to the file, not given on pg_ctl's command line: that goes through a shell, which would expand `*`.
    appendFileSync(
      join(primaryData, 'postgresql.conf'),
      [
        ...COMMON,
        `port = ${primaryPort}`,
        `unix_socket_directories = '${dir}'`,
        'synchronous_commit = on',
        `synchronous_standby_names = '${options.replication === 'sync' ? '*' : ''}'`,
        '',
      ].join('\n'),
    );
    await pgCtl(primaryData, '-w', 'start');
    primaryStarted = true;

    await asOwner('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standbyData, '-X', 'stream', '--no-sync']);
    link = await delayLink(primaryPort, options.linkDelayMs ?? 0);
    // The last setting wins. A promoted standby with the primary's synchronous_standby_names would wait for a
    // standby of its own on every commit, and there is none: writes would hang until one is attached. Waiting for
    // WAL from a dead primary, PostgreSQL 15 sometimes noticed a promote request only at its next try, every
    // wal_retrieve_retry_interval (5 s by default: measured, pg_ctl promote then took 5.0 s instead of 0.1 s).
    appendFileSync(
      join(standbyData, 'postgresql.conf'),
      [
        `port = ${standbyPort}`,
        "synchronous_standby_names = ''",
        "wal_retrieve_retry_interval = '1s'",
        `primary_conninfo = 'host=127.0.0.1 port=${link.port} user=postgres application_name=standby'`,
        '',
      ].join('\n'),
    );
    appendFileSync(join(standbyData, 'standby.signal'), '');
    await pgCtl(standbyData, '-w', 'start');
    standbyStarted = true;

    // Until the standby streams, a synchronous primary's commits would wait and an asynchronous one's would all be lost.
    const admin = postgres(url(primaryPort), { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      const deadline = performance.now() + 30_000;
      for (;;) {
        const rows = await admin<{ sync_state: string }[]>`select sync_state from pg_stat_replication where state = 'streaming'`;
        if (rows[0]?.sync_state === options.replication) break;
        if (performance.now() > deadline) throw new Error(`the standby did not stream as ${options.replication} within 30 s: ${JSON.stringify(rows)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await admin.end({ timeout: 5 });
    }
  } catch (error) {
    await stopBoth();
    // A server that did not start says why in its log, which goes with the directory.
    const logs = ['primary', 'standby'].map((name) => `${name}.log:\n${readIfThere(join(dir, `${name}.log`))}`).join('\n');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the replicated pair did not start: ${(error as Error).message}\n${logs}`, { cause: error });
  }

  return {
    url: url(primaryPort, standbyPort),
    primaryUrl: url(primaryPort),
    standbyUrl: url(standbyPort),
    mode: options.replication,
    stallLink: () => link?.stall(),
    async killPrimary() {
      const postmaster = Number(readFileSync(join(primaryData, 'postmaster.pid'), 'utf8').split('\n')[0]);
      // Every process at once, as a machine that dies. Stopped first, the postmaster forks no backend between
      // the look for its children and the kill: one it forked then would live on to answer a connection.
      process.kill(postmaster, 'SIGSTOP');
      for (const pid of [...childrenOf(postmaster), postmaster]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      link?.close();
      primaryStarted = false;
    },
    async promote() {
      await pgCtl(standbyData, '-w', 'promote');
    },
    logs: () => ['primary', 'standby'].map((name) => `${name}.log:\n${readIfThere(join(dir, `${name}.log`), 20_000)}`).join('\n'),
    async destroy() {
      await stopBoth();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readIfThere(file: string, chars = 2000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return '(none)';
  }
}

/** The processes whose parent is `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command may hold spaces and parentheses: the fields after its closing one are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) children.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}

interface DelayLink {
  port: number;
  /** Passes no byte from now on, either way. */
  stall(): void;
  /** Drops every connection and every byte still on the way. */
  close(): void;
}

/** A TCP relay to `targetPort` that holds every chunk `delayMs` before passing it on, in order, both ways. */
async function delayLink(targetPort: number, delayMs: number): Promise<DelayLink> {
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  let stalled = false;
  const relay = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk) => {
      if (stalled) return;
      if (delayMs === 0) return void to.write(chunk);
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!to.destroyed && !stalled) to.write(chunk);
      }, delayMs);
      timers.add(timer);
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };
  const server = net.createServer((standby) => {
    if (closed) return void standby.destroy();
    const primary = net.connect(targetPort, '127.0.0.1');
    sockets.add(standby).add(primary);
    standby.on('close', () => sockets.delete(standby));
    primary.on('close', () => sockets.delete(primary));
    relay(standby, primary);
    relay(primary, standby);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    stall() {
      stalled = true;
    },
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
