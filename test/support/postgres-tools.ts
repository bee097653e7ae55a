import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** What the clusters a test makes of its own share: PostgreSQL's own tools (initdb, pg_ctl…), run as their owner. */

const run = promisify(execFile);
const BIN = process.env.ONCEHOOK_PG_BIN ?? '/usr/lib/postgresql/15/bin';

const asRoot = () => process.getuid?.() === 0;

/** initdb refuses to run as root: as root, a cluster belongs to, and runs as, the `postgres` user. */
export async function asOwner(command: string, args: string[]): Promise<void> {
  if (asRoot()) await run('runuser', ['-u', 'postgres', '--', join(BIN, command), ...args]);
  else await run(join(BIN, command), args);
}

/** A new temporary directory for a cluster's files, owned by whoever `asOwner` runs the tools as. */
export async function clusterDir(prefix: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (asRoot()) {
    const { stdout: uid } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(uid.trim()), Number(gid.trim()));
  }
  return dir;
}
