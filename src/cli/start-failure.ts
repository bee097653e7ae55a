import { DriverNotRepaired } from '../store/driver-repairs.ts';
import { UnknownFunctionRevision } from '../store/functions.ts';

/**
 * A start-up failure a person can fix (no such database, nothing listening, a port taken), said in one line
 * naming the problem and what to do: the driver's stack only hides that. A failure not recognised here keeps
 * its stack, since it may be a bug.
 */
export class StartFailure extends Error {
  override name = 'StartFailure';
}

/**
 * Where a PostgreSQL URL points, fit to print: host, port and database. Everything up to the last `@` is
 * dropped, since the user and password are written there (even a password with an unencoded `/` in it),
 * and so is the query string, which may carry options.
 */
export function databaseTarget(url: string): string | null {
  const scheme = url.indexOf('://');
  const rest = scheme === -1 ? url : url.slice(scheme + 3);
  const query = rest.search(/[?#]/);
  // An `@` after a `?` or `#`: a password holding one of those unencoded. Where the driver then believes the
  // host ends is inside the password, so nothing of this URL is fit to print.
  if (query !== -1 && rest.indexOf('@', query) !== -1) return null;
  const address = query === -1 ? rest : rest.slice(0, query);
  return address.slice(address.lastIndexOf('@') + 1);
}

interface SystemError {
  code?: unknown;
  syscall?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
  name?: unknown;
  message?: unknown;
  /** Set by the gateway on an error of its listening socket (a --host that does not resolve fails in getaddrinfo). */
  listening?: unknown;
}

function listenFailure(error: SystemError): StartFailure | null {
  const on = `cannot listen on ${String(error.address)}:${String(error.port)}`;
  switch (error.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartFailure(`cannot listen on ${String(error.hostname)}: no such address — correct --host`);
    case 'EADDRINUSE':
      return new StartFailure(`${on}: the port is in use by another process — stop it, or choose another port with --port`);
    case 'EACCES':
      return new StartFailure(`${on}: permission denied (ports below 1024 need privileges) — choose another port with --port`);
    case 'EADDRNOTAVAIL':
      return new StartFailure(`${on}: no such address on this machine — correct --host`);
    default:
      return null;
  }
}

/** How the last host of a multi-host DATABASE_URL failed, by the error's code. */
const LAST_HOST: Record<string, string> = {
  TARGET_SESSION_ATTRS_UNMET: 'is a standby or read-only',
  ECONNREFUSED: 'refused the connection',
  CONNECT_TIMEOUT: 'did not answer',
  ETIMEDOUT: 'did not answer',
  EHOSTUNREACH: 'did not answer',
};

function databaseFailure(error: SystemError, databaseUrl: string, setting: string): StartFailure | null {
  // Node's invalid-URL error carries the URL itself (`input`), password and all: none of it is repeated.
  if (error.code === 'ERR_INVALID_URL' || error.name === 'URIError') {
    return new StartFailure(`${setting} is not a URL — write it as postgres://USER:PASSWORD@HOST:5432/DATABASE, percent-encoding @ : / ? # % in the password`);
  }
  const target = databaseTarget(databaseUrl);
  if (target === null) {
    return new StartFailure(`${setting} cannot be read: its password holds a "?" or "#" — percent-encode it (%3F, %23), and any @ : / % too`);
  }
  const at = `PostgreSQL at ${target}`;
  // PostgreSQL's own messages name the database or user at fault and never the password.
  const said = String(error.message);
  // A server that target_session_attrs refuses (a standby, for read-write) fails with TARGET_SESSION_ATTRS_UNMET, a
  // code of scripts/patch-postgres.mjs.
  const wanted = /[?&]target_session_attrs=([a-z-]+)/.exec(databaseUrl)?.[1];
  // Several hosts: each was tried and failed, and the error is the last one's. During a failover, until the
  // promotion, every host fails: the dead primary refuses or does not answer, the standby is refused.
  const last = typeof error.code === 'string' ? LAST_HOST[error.code] : undefined;
  if (target.includes(',') && last) {
    return new StartFailure(
      `cannot reach ${at}: no host there took the connection${wanted ? ` as target_session_attrs=${wanted} asks` : ''} (the last one tried ${last}) — during a failover, start again once the standby is promoted; otherwise check the hosts in ${setting}`,
    );
  }
  switch (error.code) {
    case '3D000':
      return new StartFailure(`cannot reach ${at}: ${said} — create it first, or correct the database in ${setting}`);
    case '28P01':
      return new StartFailure(`${at} refused the login: ${said} — correct the user or password in ${setting}`);
    // Also "no pg_hba.conf entry for host …": the user may be right and the server not admit this host.
    case '28000':
      return new StartFailure(`${at} refused the login: ${said} — check the user in ${setting}, and that the server's pg_hba.conf admits this host (and its sslmode)`);
    case 'ECONNREFUSED':
      return new StartFailure(`cannot reach ${at}: connection refused — start PostgreSQL there, or correct the host and port in ${setting}`);
    // sslmode=require against a server without TLS: the server answers the TLS request with "no" and the
    // client gives up the connection.
    case 'ECONNRESET':
      return /TLS/.test(said)
        ? new StartFailure(`cannot reach ${at}: the server closed the connection before TLS was set up — it may not accept TLS: enable ssl on the server, or drop sslmode=require from ${setting}`)
        : new StartFailure(`cannot reach ${at}: the connection was reset — check the host and port in ${setting}, and any proxy in between`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartFailure(`cannot reach ${at}: no such host — correct the host in ${setting}`);
    case 'TARGET_SESSION_ATTRS_UNMET':
      return new StartFailure(`cannot reach ${at}: it is not what target_session_attrs=${wanted} asks for (a standby or read-only) — correct ${setting}, or start again once it is promoted`);
    case 'CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return new StartFailure(`cannot reach ${at}: no answer — check the host and port in ${setting}, and that a firewall lets it through`);
    default:
      return null;
  }
}

/**
 * Runs the start of `serve` or `migrate` (or `copy-data`), turning a failure a person can fix into a StartFailure.
 * `setting` is where the person wrote the URL, named in the advice.
 */
export async function starting<T>(databaseUrl: string | undefined, work: () => Promise<T>, setting = 'DATABASE_URL'): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (typeof error !== 'object' || error === null) throw error;
    if (error instanceof DriverNotRepaired || error instanceof UnknownFunctionRevision) throw new StartFailure(error.message);
    const system = error as SystemError;
    const failure = system.syscall === 'listen' || system.listening ? listenFailure(system) : databaseUrl ? databaseFailure(system, databaseUrl, setting) : null;
    const { waitedMs } = error as { waitedMs?: unknown };
    // A start that waited for the database says so: the failure outlasted the wait, and --db-wait can lengthen it.
    if (failure && typeof waitedMs === 'number') throw new StartFailure(`${failure.message} (waited ${Math.round(waitedMs / 1000)} s for it; --db-wait sets how long)`);
    throw failure ?? error;
  }
}
