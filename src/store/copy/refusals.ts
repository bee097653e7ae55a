import { DataDirInUseError, lockDataDir } from '../data-dir-lock.ts';
import type { Query } from './catalog.ts';
import { foreignRelations, oncehookSessions, OWN_TABLES, tablesWithRows } from './target.ts';
import { appliedMigrations, standing } from './versions.ts';

/** copy-data will not copy, or could not: the message says why and what to do. Nothing was committed. */
export class CopyDataError extends Error {
  override name = 'CopyDataError';
}

/** The data directory's lock, or a refusal when a gateway holds it. */
export function lockOrRefuse(dataDir: string): () => void {
  try {
    return lockDataDir(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
    throw new CopyDataError(`stop the gateway before copying its data: ${error.message}`);
  }
}

/**
 * The target must be oncehook's alone and hold no row yet: a database that is someone else's is not written to,
 * not even by the migrations, and a copy never merges into another history. A migrated, empty oncehook database
 * (a copy that failed, say) is fine.
 */
export async function refuseUnlessEmpty(target: Query, known: number): Promise<void> {
  const sessions = await oncehookSessions(target);
  if (sessions.length > 0) {
    throw new CopyDataError(`a gateway is connected to the target database (its sessions ${list(sessions.map(String))}): stop it. copy-data fills a database nothing else uses`);
  }
  const foreign = await foreignRelations(target);
  if (foreign.length > 0) {
    throw new CopyDataError(
      `the target database is not empty: it has ${list(foreign)}, which are not oncehook's. Copy into a database of its own (createdb oncehook)`,
    );
  }
  const filled = await tablesWithRows(target, OWN_TABLES);
  if (filled.length > 0) {
    throw new CopyDataError(`the target database already holds oncehook data (rows in ${list(filled)}): copy-data fills an empty database only, never merges two histories`);
  }
  const applied = await appliedMigrations(target);
  if (applied.length > known) {
    throw new CopyDataError(`the target database has ${applied.length} migrations, this build knows ${known}: a newer release migrated it. Copy with that release`);
  }
}

export function refuseOtherSchema(applied: number[], known: number[], dataDir: string): void {
  switch (standing(applied, known)) {
    case 'same':
      return;
    case 'older':
      throw new CopyDataError(
        `the data directory has ${applied.length} of this build's ${known.length} migrations: an older release's gateway wrote it. ` +
          `Bring it to this build's schema first (run \`ONCEHOOK_DATA_DIR=${dataDir} oncehook migrate\` with this release, or start its gateway on it once), then copy. copy-data itself changes nothing in the directory`,
      );
    case 'newer':
      throw new CopyDataError(`the data directory has ${applied.length} migrations, this build knows ${known.length}: a newer release's gateway wrote it. Copy with that release`);
    case 'different':
      throw new CopyDataError('the data directory\'s migrations are not this build\'s (another branch\'s?): copy with the build whose gateway wrote it');
  }
}

export const list = (names: readonly string[]) => (names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', '));
