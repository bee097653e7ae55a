import { setTimeout as sleep } from 'node:timers/promises';
import { notifyIfWaiting } from '../store/atomic/finish.ts';
import type { Db } from '../store/connect.ts';
import { TASK_STATES } from '../store/decisions.ts';
import type { Routes } from './routes.ts';

/**
 * A freed slot of a `maxInFlight` origin is told to the other instances at most this often by one process: each
 * notification wakes every worker of every instance to claim, and one that a later finish would have sent a few
 * milliseconds later carries its news too.
 */
const SLOT_NOTIFY_EVERY_MS = 5;

/**
 * Tells the other instances that a slot of a `maxInFlight` origin is free. A finish that frees one wakes its own
 * worker, but the slot is every instance's: a worker of another instance whose claim the limit held back waited for
 * its poll (up to `pollMs`) though the slot was free. So the finish, once committed, wakes them all with a NOTIFY on
 * the ingest's channel, whose listeners claim on any notification — sent only when a task the origin holds waits
 * (notifyIfWaiting: the claims are this process's config's, which a deployment's instances share), and at most every
 * SLOT_NOTIFY_EVERY_MS per process. Not in the finish's own statement: its NOTIFY would serialize the group commits
 * of every instance, for every finish, needed or not. (The waits measured: docs/performance-history.md.)
 *
 * The unlimited path runs none of this: an action no destination limits has the plain finish, and only
 * `maxInFlight` origins are told, so a rate limit's finish sends nothing either — each worker's look at the next due
 * time covers its next token. The notifying worker hears its own notification too: one more look beside the one its
 * finish asked for, which the throttle bounds; telling it apart would take the payload through Store.listen.
 */
export class SlotNotices {
  readonly #db: Db;
  /** For each origin a `maxInFlight` limits, the claims (`state:source:action`) its freed slot may let go. */
  readonly #waiters: ReadonlyMap<string, readonly string[]>;
  /** The origins whose slots were freed since the last notification, and the notifications' loop while it runs. */
  readonly #freed = new Set<string>();
  #notifying: Promise<void> | null = null;

  constructor(db: Db, routes: Routes) {
    this.#db = db;
    this.#waiters = slotWaiters(routes);
  }

  /** Whether a freed slot of `origin` may let another instance's claim go: a `maxInFlight` limits it. */
  tells(origin: string): boolean {
    return this.#waiters.has(origin);
  }

  /** A slot of `origin` is free, its finish committed: tell the other instances soon. */
  freed(origin: string): void {
    this.#freed.add(origin);
    this.#notifying ??= this.#notify().finally(() => {
      this.#notifying = null;
    });
  }

  /** Waits for the notifications on their way. */
  async settled(): Promise<void> {
    await this.#notifying;
  }

  async #notify(): Promise<void> {
    while (this.#freed.size > 0) {
      const waiting = [...this.#freed].flatMap((origin) => this.#waiters.get(origin)!);
      this.#freed.clear();
      // A notification lost (the database away) costs the other instances their poll's wait, no more.
      await notifyIfWaiting(this.#db, [...new Set(waiting)]).catch(() => {});
      await sleep(SLOT_NOTIFY_EVERY_MS);
    }
  }
}

/** For each origin a `maxInFlight` limits, the claims its freed slot may let go: its limited groups' routes, by state. */
function slotWaiters(routes: Routes): Map<string, string[]> {
  const waiters = new Map<string, string[]>();
  for (const group of routes.limitedGroups) {
    for (const limit of group.limits) {
      if (limit.maxInFlight === null) continue;
      const claims = waiters.get(limit.origin) ?? [];
      for (const route of group.routes) {
        for (const state of route.states ?? [TASK_STATES.pending, TASK_STATES.outcomeUnknown]) claims.push(`${state}:${route.source}:${route.action}`);
      }
      waiters.set(limit.origin, claims);
    }
  }
  return waiters;
}
