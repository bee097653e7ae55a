import type { Context } from 'hono';
import type { Store } from '../store/connect.ts';
import { settleWithin } from '../store/lane.ts';
import { readiness } from '../store/queries/health.ts';

/** A probe is answered by then: a database that has not answered is not ready, whatever it does later. */
const LONGEST_PROBE_MS = 5_000;

/**
 * `/readyz`: 200 only when the database answers, every migration this build ships is applied, this process's
 * own worker loop (where it runs one) has looked at the queue lately, and no lease has lain expired past the
 * stall limit (which a live worker anywhere would have reclaimed). Each check is named in the answer, so a
 * failing probe says which one failed. A pooled connection that went silent (a failover that moved the address)
 * would hold the probe until TCP gives up, so the database is given the shorter of `writeStallMs` and 5 s.
 *
 * The leases are evidence about the queue, not about workers: a web-only process with no worker anywhere finds
 * none stalled too. So they are answered as `leases`, and this process's worker as `ownWorker`, `absent` where
 * it runs none; `workers` is their former joint name, kept for probes that match on it. `configVersion` tells
 * instances that run different configs apart (a rollout half done), whether or not they are ready.
 */
export async function ready(
  c: Context,
  store: Store,
  ownWorkerAlive: boolean | undefined,
  stallMs: number,
  configVersion: string,
): Promise<Response> {
  const deadline = Math.min(stallMs, LONGEST_PROBE_MS);
  const unanswered = new Error('unanswered');
  let state;
  try {
    state = await settleWithin(readiness(store.db), deadline, () => unanswered);
  } catch (error) {
    return c.json({ ok: false, database: error === unanswered ? 'unanswered' : 'unreachable', configVersion }, 503);
  }
  const migrations = state.migrations.applied >= state.migrations.shipped ? 'applied' : 'behind';
  const leases = state.stalledLeases === 0 ? 'none stalled' : 'stalled';
  const ownWorker = ownWorkerAlive === undefined ? 'absent' : ownWorkerAlive ? 'looking' : 'silent';
  // Stalled leases say workers are gone, which a process that only receives cannot mend: taken out of the load
  // balancer for it, every web process would stop recording deliveries too. It reports them; workers fail on them.
  const ok = migrations === 'applied' && ownWorker !== 'silent' && (leases === 'none stalled' || ownWorker === 'absent');
  return c.json(
    {
      ok,
      database: 'reachable',
      migrations,
      ...state.migrations,
      leases,
      stalledLeases: state.stalledLeases,
      ownWorker,
      workers: leases === 'none stalled' && ownWorker !== 'silent' ? 'alive' : 'stalled',
      configVersion,
    },
    ok ? 200 : 503,
  );
}
