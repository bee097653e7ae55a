import type { Context } from 'hono';
import type { Store } from '../store/connect.ts';
import { readiness } from '../store/queries/health.ts';

/**
 * `/readyz`: 200 only when the database answers, every migration this build ships is applied, this process's
 * own worker loop (where it runs one) has looked at the queue lately, and no lease has lain expired past the
 * stall limit (which a live worker anywhere would have reclaimed). Each check is named in the answer, so a
 * failing probe says which one failed.
 */
export async function ready(c: Context, store: Store, ownWorkerAlive: boolean | undefined): Promise<Response> {
  let state;
  try {
    state = await readiness(store.db);
  } catch {
    return c.json({ ok: false, database: 'unreachable' }, 503);
  }
  const migrations = state.migrations.applied >= state.migrations.shipped ? 'applied' : 'behind';
  const workers = state.stalledLeases === 0 && ownWorkerAlive !== false ? 'alive' : 'stalled';
  const ok = migrations === 'applied' && workers === 'alive';
  return c.json(
    {
      ok,
      database: 'reachable',
      migrations,
      ...state.migrations,
      workers,
      ...(ownWorkerAlive === undefined ? {} : { ownWorker: ownWorkerAlive ? 'looking' : 'silent' }),
      stalledLeases: state.stalledLeases,
    },
    ok ? 200 : 503,
  );
}
