import { assertDriverRepaired } from './driver-repairs.ts';
import type { Store, StoreOptions } from './store.ts';

export type { Db, Store, StoreOptions, WriteLane } from './store.ts';

/**
 * Opens the store on the engine the options name. Each engine's driver is imported only when it is used: either
 * one loaded for nothing was ~0.1–0.25 s of every start on the other.
 */
export async function openStore(options: StoreOptions): Promise<Store> {
  if (!options.databaseUrl) {
    const { openPglite } = await import('./pglite-store.ts');
    return openPglite(options.dataDir, options.logger, options.memoryImage);
  }
  await assertDriverRepaired();
  const { openPostgres } = await import('./postgres-store.ts');
  return openPostgres(options.databaseUrl, options.poolSize ?? 10);
}
