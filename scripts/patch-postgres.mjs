// Repairs in postgres.js 3.4.x that oncehook depends on. Applied at install (the postinstall runs this file), and
// checked at start-up on PostgreSQL by src/store/driver-repairs.ts, which names this file's command when one is
// missing (an install with --ignore-scripts runs no postinstall). Each repair leaves a marker comment in the
// driver's code: a repair whose marker is there is left alone, so running this again, on an install already
// repaired, changes nothing and succeeds. It refuses loudly if the driver's code has moved on: then check whether
// the upstream fix landed and remove the repair.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repairs = [
  {
    // Upstream issues porsager/postgres#1154 and #1208, unfixed in 3.4.9: a write buffered behind setImmediate
    // runs after the socket closed and throws from a timer, where nothing can catch it, taking the whole gateway
    // down exactly when the database restarts. The repaired write fails the waiting query with CONNECTION_CLOSED
    // instead, and teardown forgets the stale timer so the connection can write again after it reconnects.
    name: 'null-socket guard',
    edits: [
      [
        '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
        `  function nextWrite(fn) {\n    /* oncehook: null-socket guard */\n    if (!socket) {\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)`,
      ],
      [
        '  async function closed(hadError) {\n    incoming = Buffer.alloc(0)\n    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n',
        '  async function closed(hadError) {\n    incoming = Buffer.alloc(0)\n    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n',
      ],
    ],
  },
  {
    // target_session_attrs=read-write took a hot standby for a primary. Since PostgreSQL 14 the server reports
    // default_transaction_read_only at start-up, and a standby reports it `off` (its transactions are read-only all
    // the same), so the driver skipped the check it makes on older servers. libpq's rule, which this restores:
    // read-write needs the server out of hot standby and default_transaction_read_only off; read-only, the
    // converse. Against a multi-host DATABASE_URL a connection landed on the standby during a failover: every
    // write there failed, and the LISTEN that wakes the workers failed once and was never tried again.
    name: 'read-write skips a hot standby',
    edits: [
      [
        "      (x === 'read-write' && xs.default_transaction_read_only === 'on') ||\n      (x === 'read-only' && xs.default_transaction_read_only === 'off') ||",
        "      /* oncehook: read-write skips a hot standby */\n      (x === 'read-write' && (xs.default_transaction_read_only === 'on' || xs.in_hot_standby === 'on')) ||\n      (x === 'read-only' && xs.default_transaction_read_only === 'off' && xs.in_hot_standby === 'off') ||",
      ],
    ],
  },
  {
    // A multi-host URL's connection attempt went from host to host without end and without a pause: with the primary
    // dead and the standby not yet promoted, each connection asked the standby again every few milliseconds
    // (measured: 120 times a second for one connection, each a new backend there), and the statement waiting
    // for it hung until a primary appeared. The host counter the driver reads (`retries`, "is there another
    // host to try?") was never advanced. Advanced now, an attempt tries each host once, in turn, and fails as
    // with a single host, with the last host's error (libpq's rule); the driver's backoff then spaces the next
    // attempt, raised by a failed round as by a refused connection.
    name: 'one round of hosts per attempt',
    edits: [
      [
        '    if (initial)\n      return reconnect()\n\n    !hadError && (query || sent.length) && error(Errors.connection(\'CONNECTION_CLOSED\', options, socket))\n    closedTime = performance.now()\n    hadError && options.shared.retries++\n',
        '    /* oncehook: one round of hosts per attempt */\n    if (initial)\n      return retries++, reconnect()\n\n    !hadError && (query || sent.length) && error(Errors.connection(\'CONNECTION_CLOSED\', options, socket))\n    closedTime = performance.now()\n    ;(hadError || retries > 0) && options.shared.retries++\n    retries = 0\n',
      ],
    ],
  },
  {
    // A host that accepts no connection and refuses none (a dead machine whose address nobody answers for) failed
    // the statement after connect_timeout instead of passing to the next host. Each connection starts its round
    // where its last one ended, so after a failover to the second host it met the dead first one again on every
    // reconnect: a statement failed after 5 s each time. Passed to the next host now, as libpq does; on the last
    // host it fails the attempt as before.
    name: 'a host that does not answer passes to the next',
    edits: [
      [
        "  function connectTimedOut() {\n    errored(Errors.connection('CONNECT_TIMEOUT', options, socket))",
        "  function connectTimedOut() {\n    /* oncehook: a host that does not answer passes to the next */\n    error(Errors.connection('CONNECT_TIMEOUT', options, socket))",
      ],
    ],
  },
  {
    // A host that target_session_attrs refuses (a standby, for read-write) was left with CONNECTION_DESTROYED, the
    // code of a connection lost in use. oncehook gives up a connection that failed in use and tries again at once
    // on a new one, so during a failover each ingest batch opened a new connection to the standby (measured: 50-90
    // a second under the failover test's load), where a refused or silent primary leaves the driver's backoff to
    // space the tries. Refused now with a code of its own, which oncehook counts as unreachable, like a refused
    // connection; on a host that is not the last it is passed over as before.
    name: 'a refused host has a code of its own',
    edits: [
      [
        '        else if (tryNext(target_session_attrs, backendParameters))\n          return terminate()',
        "        else if (tryNext(target_session_attrs, backendParameters))\n          /* oncehook: a refused host has a code of its own */\n          return error(Errors.connection('TARGET_SESSION_ATTRS_UNMET', options, socket)), terminate()",
      ],
    ],
  },
  {
    // Upstream issue porsager/postgres#1173, unfixed in 3.4.9: a COPY FROM STDIN that the server refuses after the
    // last row was sent never settles its writable. Its final callback waits for a CommandComplete that never comes,
    // so the caller waits for ever, and inside sql.begin() no ROLLBACK is sent: `oncehook copy-data` would hang on a
    // row its target refused, holding the target's tables locked. Settled now with the server's error, so the
    // writable fails and the transaction rolls back.
    name: 'a refused COPY FROM STDIN fails its writable',
    edits: [
      [
        '  function errored(err) {\n    stream && (stream.destroy(err), stream = null)\n',
        '  function errored(err) {\n    /* oncehook: a refused COPY FROM STDIN fails its writable */\n    final && (final(err), final = null)\n    stream && (stream.destroy(err), stream = null)\n',
      ],
    ],
  },
  {
    // Upstream issue porsager/postgres#1130, unfixed in 3.4.9: a connection whose socket closed while a query was in
    // flight kept that (rejected) query, and `end()` waited for it to finish, which it never would, until the end's
    // timeout. Every close of oncehook's store after a lost or abandoned connection took its whole 5 s, and a
    // SIGTERM after a failover 5 s more than it needed. Closed, the connection forgets the query and, if an end
    // waits on it, ends.
    name: 'a closed connection ends at once',
    edits: [
      [
        "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n    closedTime = performance.now()\n    ;(hadError",
        "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n    /* oncehook: a closed connection ends at once */\n    query = null\n    ended && (ended(), ending = ended = null)\n    closedTime = performance.now()\n    ;(hadError",
      ],
    ],
  },
];

/** The marker a repair leaves in the driver's code. */
const markerOf = (name) => `/* oncehook: ${name} */`;

/** The driver's two builds (ESM and CommonJS) below the postgres package that `from` (a file URL) resolves. */
function driverFiles(from) {
  // The CommonJS entry sits at cjs/src/index.js: two folders below the package root.
  const root = join(dirname(createRequire(from).resolve('postgres')), '..', '..');
  return ['src/connection.js', 'cjs/src/connection.js'].map((f) => join(root, f)).filter((f) => existsSync(f));
}

/** The names of the repairs missing from the driver that `from` resolves, in either of its builds. */
export function missingRepairs(from = import.meta.url) {
  const missing = new Set();
  for (const file of driverFiles(from)) {
    const code = readFileSync(file, 'utf8');
    for (const { name } of repairs) if (!code.includes(markerOf(name))) missing.add(name);
  }
  return [...missing];
}

/** Applies every missing repair; throws, naming the repair, when the driver's code no longer has what it changes. */
export function applyRepairs(from = import.meta.url) {
  for (const file of driverFiles(from)) {
    let code = readFileSync(file, 'utf8');
    const before = code;
    for (const { name, edits } of repairs) {
      // Repairs may touch neighbouring lines, so one repair's edit can hide another's text: the marker decides.
      if (code.includes(markerOf(name))) continue;
      for (const [from, to] of edits) {
        if (!code.includes(from)) {
          throw new Error(`patch-postgres: ${file} no longer has the code the "${name}" repair changes; check whether the upstream fix landed and remove the repair`);
        }
        code = code.replace(from, to);
      }
    }
    if (code !== before) writeFileSync(file, code);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    applyRepairs();
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
