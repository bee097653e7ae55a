import { fileURLToPath } from 'node:url';

/**
 * oncehook relies on repairs to postgres.js (scripts/patch-postgres.mjs says what each one is for) that the
 * install applies. An install run with --ignore-scripts applies none, and nothing would show it until a database
 * restart took the gateway down: so a start on PostgreSQL checks them first and refuses without them.
 */
export class DriverNotRepaired extends Error {
  override name = 'DriverNotRepaired';
}

// The same relative path from src/store and from dist/src/store: the build copies the script to dist/scripts.
const SCRIPT = new URL('../../scripts/patch-postgres.mjs', import.meta.url);

/** Throws a DriverNotRepaired naming the missing repairs and the command that applies them. */
export async function assertDriverRepaired(): Promise<void> {
  const { missingRepairs } = (await import(SCRIPT.href)) as typeof import('../../scripts/patch-postgres.mjs');
  const missing = missingRepairs();
  if (missing.length === 0) return;
  throw new DriverNotRepaired(
    `the PostgreSQL driver lacks ${missing.length} of oncehook's repairs (${missing.join('; ')}), as after an install with --ignore-scripts — run \`node ${fileURLToPath(SCRIPT)}\`, then start again`,
  );
}
