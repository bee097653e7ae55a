import { limitOf } from '../config/destinations.ts';
import type { Config } from '../config/schema.ts';
import { templateOrigin } from '../shape/url-template.ts';
import { outcomeRuleOf, type OutcomeRule } from '../store/atomic/claim.ts';
import type { Store } from '../store/connect.ts';
import { queueFigures, type QueueFigures } from '../store/queries/stats.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { AWAITING_DESTINATION } from '../store/operator-rules.ts';
import { destinationUse, listDestinations, lookupsAsked, type DestinationRow, type DestinationUse } from '../store/queries/destinations.ts';

export interface DestinationView extends Omit<DestinationRow, 'updatedAt'> {
  status: 'open' | 'cooling' | 'paused';
  /** The configured actions that send to it, as `source/action`. */
  actions: string[];
  /** The configured actions whose lookups it answers, as `source/action`. */
  lookups: string[];
  /** Its `destinations` entry: the limits every worker of every instance holds it to; null: none. */
  limit: { perSecond: number | null; burst: number | null; maxInFlight: number | null } | null;
}

/** A destination as a person looks at it: its standing, and how much of its limits it uses now. */
export type DestinationWithUse = DestinationView & DestinationUse;

/**
 * Every configured destination with its standing; one the database knows but config no longer names is listed too.
 * With `use`, also what each has in flight, in its bucket and waiting: counts over the queue, for the pages a
 * person opens, not for the looks every scrape takes at what is paused.
 */
export async function destinations(store: Store, config: Config): Promise<DestinationView[]>;
export async function destinations(store: Store, config: Config, use: 'with use'): Promise<DestinationWithUse[]>;
export async function destinations(store: Store, config: Config, withUse?: 'with use'): Promise<DestinationView[]> {
  const actions = new Map<string, string[]>();
  const lookups = new Map<string, string[]>();
  const routes: { origin: string; route: string }[] = [];
  const lookupRoutes: ({ origin: string; route: string } & OutcomeRule)[] = [];
  for (const { source, action, config: actionConfig, origin, lookupAt } of configuredActions(config)) {
    actions.set(origin, [...(actions.get(origin) ?? []), `${source}/${action}`]);
    routes.push({ origin, route: `${source}:${action}` });
    if (lookupAt === null) continue;
    lookups.set(lookupAt, [...(lookups.get(lookupAt) ?? []), `${source}/${action}`]);
    lookupRoutes.push({ origin: lookupAt, route: `${source}:${action}`, ...outcomeRuleOf(actionConfig) });
  }
  const limits = new Map(Object.entries(config.destinations).map(([origin, d]) => [origin, limitOf(origin, d)]));
  const rates = [...limits.values()].flatMap(({ origin, perSecond, burst }) => (perSecond === null ? [] : [{ origin, perSecond, burst: burst! }]));
  const [rows, use] = await Promise.all([listDestinations(store.db), withUse ? destinationUse(store.db, routes, lookupRoutes, rates) : null]);
  const known = new Map(rows.map((row) => [row.origin, row]));
  const now = Date.now();
  return [...new Set([...actions.keys(), ...lookups.keys(), ...limits.keys(), ...known.keys()])].sort().map((origin) => {
    const row = known.get(origin);
    const status = row?.pausedAt ? 'paused' : row?.cooldownUntil && row.cooldownUntil.getTime() > now ? 'cooling' : 'open';
    const { origin: _, ...limit } = limits.get(origin) ?? { origin };
    return {
      origin,
      status,
      cooldownUntil: row?.cooldownUntil ?? null,
      pausedAt: row?.pausedAt ?? null,
      pausedReason: row?.pausedReason ?? null,
      actions: actions.get(origin) ?? [],
      lookups: lookups.get(origin) ?? [],
      limit: limits.has(origin) ? (limit as DestinationView['limit']) : null,
      ...(use === null ? {} : (use.get(origin) ?? { inFlight: 0, tokens: null, waiting: 0, waitingLookups: 0 })),
    };
  });
}

/** Each configured action, with the origin its sends go to and the one its lookups go to (null: it has none). */
function configuredActions(config: Config) {
  return Object.entries(config.sources).flatMap(([source, sourceConfig]) =>
    Object.entries(sourceConfig.actions).map(([action, actionConfig]) => {
      const { lookup } = actionConfig;
      const lookupAt = lookup === undefined ? null : templateOrigin(typeof lookup === 'string' ? lookup : lookup.url);
      return { source, action, config: actionConfig, origin: new URL(actionConfig.url).origin, lookupAt };
    }),
  );
}

/** What says where a task goes and whether it is still to be sent; the database reads what its next claim would do. */
type HeldTask = { id: string; state: string; source: string; action: string };

/** Paused destinations by the routes (`source/action`) they hold, and how. */
export interface Paused {
  /** By the routes that send to them: each such task still to be sent waits. */
  sends: Map<string, DestinationView>;
  /** By the routes whose lookups they answer: an unknown outcome whose claim would ask the lookup waits. */
  lookups: Map<string, { destination: DestinationView; rule: OutcomeRule }>;
}

/** The destinations paused now, with the routes each holds. */
export async function pausedRoutes(store: Store, config: Config): Promise<Paused> {
  return pausedAmong(await destinations(store, config), config);
}

function pausedAmong(listed: DestinationView[], config: Config): Paused {
  const paused = new Map(listed.filter((d) => d.status === 'paused').map((d) => [d.origin, d]));
  const sends = new Map<string, DestinationView>();
  const lookups: Paused['lookups'] = new Map();
  for (const { source, action, config: actionConfig, origin, lookupAt } of configuredActions(config)) {
    const route = `${source}/${action}`;
    if (paused.has(origin)) sends.set(route, paused.get(origin)!);
    if (lookupAt !== null && paused.has(lookupAt)) lookups.set(route, { destination: paused.get(lookupAt)!, rule: outcomeRuleOf(actionConfig) });
  }
  return { sends, lookups };
}

/** The attention queue's figures, with the routes of the destinations paused now. */
export async function queueOf(store: Store, config: Config): Promise<QueueFigures> {
  return queueFigures(store.db, [...(await pausedRoutes(store, config)).sends.keys()]);
}

/** A paused destination holding a task, and what the task would ask it. */
export interface Held {
  destination: DestinationView;
  use: 'send' | 'lookup';
}

/**
 * The paused destination holding each of `tasks` that one holds, by task ID: the one its action sends to, else, for
 * an unknown outcome whose next claim is a lookup, the one that lookup goes to. Whether the claim would ask the lookup
 * is the claim's own rule, asked of the database (oncehook_unknown_outcome_mode).
 */
export async function heldAmong(store: Store, paused: Paused, tasks: readonly HeldTask[]): Promise<Map<string, Held>> {
  const held = new Map<string, Held>();
  const byLookup = new Map<string, Held>();
  for (const task of tasks) {
    if (!AWAITING_DESTINATION.includes(task.state as never)) continue;
    const route = `${task.source}/${task.action}`;
    const send = paused.sends.get(route);
    const lookup = paused.lookups.get(route);
    if (send) held.set(task.id, { destination: send, use: 'send' });
    else if (task.state === TASK_STATES.outcomeUnknown && lookup) byLookup.set(task.id, { destination: lookup.destination, use: 'lookup' });
  }
  const rules = [...paused.lookups].map(([route, { rule }]) => ({ route, ...rule }));
  for (const id of await lookupsAsked(store.db, [...byLookup.keys()], rules)) held.set(id, byLookup.get(id)!);
  return held;
}

/**
 * Where a task still to be sent would go, and how that destination stands: the paused one holding it (its lookup's,
 * for an unknown outcome whose claim would ask it), else its action's. Null once it is out of the queue.
 */
export async function destinationOf(store: Store, config: Config, task: HeldTask): Promise<Held | null> {
  if (!AWAITING_DESTINATION.includes(task.state as never)) return null;
  const url = config.sources[task.source]?.actions[task.action]?.url;
  if (url === undefined) return null;
  const listed = await destinations(store, config);
  const held = (await heldAmong(store, pausedAmong(listed, config), [task])).get(task.id);
  if (held) return held;
  const own = listed.find((d) => d.origin === new URL(url).origin);
  return own ? { destination: own, use: 'send' } : null;
}
