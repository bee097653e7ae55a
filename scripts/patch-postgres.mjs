// Repairs a crash in postgres.js 3.4.x (upstream issues porsager/postgres#1154 and #1208, unfixed in 3.4.9):
// a write buffered behind setImmediate runs after the socket closed and throws from a timer, where nothing
// can catch it, taking the whole gateway down exactly when the database restarts. The repaired write fails
// the waiting query with CONNECTION_CLOSED instead, and teardown forgets the stale timer so the connection
// can write again after it reconnects. Runs at install; refuses loudly if the driver's code has moved on.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const MARK = '/* oncehook: null-socket guard */';
// The CommonJS entry sits at cjs/src/index.js: two folders below the package root.
const root = join(dirname(createRequire(import.meta.url).resolve('postgres')), '..', '..');

const edits = [
  [
    '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    `  function nextWrite(fn) {\n    ${MARK}\n    if (!socket) {\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)`,
  ],
  [
    '  async function closed(hadError) {\n    incoming = Buffer.alloc(0)\n    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n',
    '  async function closed(hadError) {\n    incoming = Buffer.alloc(0)\n    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n',
  ],
];

for (const file of ['src/connection.js', 'cjs/src/connection.js'].map((f) => join(root, f))) {
  if (!existsSync(file)) continue;
  let code = readFileSync(file, 'utf8');
  if (code.includes(MARK)) continue;
  for (const [before, after] of edits) {
    if (!code.includes(before)) {
      console.error(`patch-postgres: ${file} no longer has the code this patch repairs; check whether the upstream fix landed and remove the patch`);
      process.exit(1);
    }
    code = code.replace(before, after);
  }
  writeFileSync(file, code);
}
