import { Webhook } from 'standardwebhooks';
import { configMask, type Mask } from '../config/mask.ts';
import { isShaped, templateOrigin } from '../shape/url-template.ts';
import { limitOf, type DestinationLimit } from '../config/destinations.ts';
import type { OAuth2Config } from '../config/auth.ts';
import { actionSchema, type ActionConfig, type Config } from '../config/schema.ts';
import { ALERTS_SOURCE } from '../store/atomic/alerts.ts';
import { outcomeRuleOf, type ClaimRoute } from '../store/atomic/claim.ts';

/** One configured action as the forwarder uses it. */
export interface Route {
  source: string;
  action: string;
  /** The action's name among every route's, for what is kept per action (its OAuth 2.0 token). */
  key: string;
  /** The action's `auth.oauth2`, or null: a token is fetched and sent with every attempt and lookup. */
  oauth2: OAuth2Config | null;
  config: ActionConfig;
  /** The action URL's origin: the pool, the cooldown and the pause belong to it. */
  destination: string;
  /** How long a claim holds a task: the whole request, then the grace a silent worker is given. */
  leaseMs: number;
  /** The signer made from `signingSecret`, when there is one. */
  signer: Webhook | null;
  /** How to ask whether the effect exists, when the action can be asked. */
  lookup: Lookup | null;
  /** Whether a destination limits its sends or its lookups. */
  limited: boolean;
  /** Every credential of the config masked: what may be kept of the downstream's answer. */
  mask: Mask;
  /** Its url or its lookup's names the delivery: each task's own URLs were frozen with it. */
  frozenUrls: boolean;
}

/** An action's lookup, either form of the config read as one. */
export interface Lookup {
  /** The URL template: `{key}` is the task ID; where it names the delivery, each task's own is frozen with it. */
  template: string;
  /** Where its requests go: a destination's limits count them there. */
  destination: string;
  headers: Readonly<Record<string, string>>;
  /** The filter a 2xx answer's JSON must match for the effect to exist; absent: any 2xx says it does. */
  found?: unknown;
  /** Where a found answer names the effect: the task's reference, as the action's is for a send's 2xx. */
  referencePointer: string | undefined;
}

function lookupOf(config: ActionConfig): Lookup | null {
  const { lookup } = config;
  if (lookup === undefined) return null;
  const [template, headers, found] =
    typeof lookup === 'string' ? [lookup, config.headers, undefined] : [lookup.url, lookup.headers ?? config.headers, lookup.found];
  const referencePointer = (typeof lookup === 'string' ? undefined : lookup.referencePointer) ?? config.referencePointer;
  return { template, destination: templateOrigin(template), headers: headers ?? {}, referencePointer, ...(typeof lookup === 'string' ? {} : { found }) };
}

const routeKey = (source: string, action: string) => `${source}\0${action}`;

/**
 * How an alert's messages are retried while its endpoint is down. An action's default (8 attempts, waits doubling
 * from 1 s) gives up after about a minute of refused connections, and a message given up is an alert lost — no
 * alert tells of the alerts' own tasks. So: 100 attempts, the most an action may have, with waits capped at five
 * minutes. With full jitter each wait averages half its ceiling: 1 s, 2 s … 256 s, then 300 s, sum to about 3.8 h
 * before the last attempt (a standard deviation of ~14 min), the span over which a sender like Shopify retries too;
 * and a message made in a short outage waits no longer than its ceiling then (a minute's outage: ~1–2 min) once
 * the endpoint is back. Past that, the message is `failed`, listed so by `GET /api/alerts` and the Alerts page.
 */
export const ALERT_RETRIES = { maxAttempts: 100, backoff: { initialMs: 1000, maxMs: 300_000 } } as const;

/**
 * Each alert as the action its messages are tasks of (source `_alerts`): keyed, so a message whose answer was lost
 * is sent again under the same key (a `json` endpoint can tell it from a new one by `webhook-id`; Slack shows it
 * twice, which beats a lost alert); signed when the alert has a signingSecret.
 */
function alertActions(config: Config, timeoutMs: number | undefined): (readonly [string, string, ActionConfig])[] {
  return Object.entries(config.alerts).map(([alert, settings]) => [
    ALERTS_SOURCE,
    alert,
    actionSchema.parse({
      url: settings.url,
      idempotency: 'key',
      ...ALERT_RETRIES,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(settings.signingSecret === undefined ? {} : { signingSecret: settings.signingSecret }),
    }),
  ]);
}

/** Actions whose requests may go to the same limited origins, claimed together under those origins' limits. */
export interface LimitedGroup {
  limits: DestinationLimit[];
  routes: ClaimRoute[];
}

/** The routing table, from config: where each (source, action) goes and how its outcomes are settled. */
export class Routes {
  readonly #byKey = new Map<string, Route>();
  /** The actions no destination limits: one claim takes their due tasks. */
  readonly forClaim: readonly ClaimRoute[];
  /**
   * The actions a destination limits (their sends or their lookups), by the set of origins that limit them. An action
   * whose sends and unknown outcomes are limited by different sets is in two, each with the states it takes.
   */
  readonly limitedGroups: readonly LimitedGroup[];
  /** The destinations with a `rateLimit`: when their buckets run dry, the next token is a time to look again. */
  readonly rateLimits: readonly DestinationLimit[];
  /** Whether any action waits for a sibling (`after`): a success may then make another task due. */
  readonly hasSteps: boolean;

  constructor(config: Config, leaseGraceMs: number, alertTimeoutMs?: number) {
    const actions = Object.entries(config.sources).flatMap(([source, sourceConfig]) =>
      Object.entries(sourceConfig.actions).map(([action, actionConfig]) => [source, action, actionConfig] as const),
    );
    // One for every route: a downstream may echo any credential of the config, not only its own action's.
    const mask = configMask(config);
    for (const [source, action, actionConfig] of [...actions, ...alertActions(config, alertTimeoutMs)]) {
      const lookup = lookupOf(actionConfig);
      this.#byKey.set(routeKey(source, action), {
        source,
        action,
        key: routeKey(source, action),
        oauth2: actionConfig.auth?.oauth2 ?? null,
        config: actionConfig,
        destination: new URL(actionConfig.url).origin,
        leaseMs: actionConfig.timeoutMs + leaseGraceMs,
        // The config's schema has checked that it decodes.
        signer: actionConfig.signingSecret === undefined ? null : new Webhook(actionConfig.signingSecret),
        lookup,
        limited: false,
        mask,
        frozenUrls: isShaped(actionConfig.url) || (lookup !== null && isShaped(lookup.template)),
      });
    }
    this.hasSteps = [...this.#byKey.values()].some((route) => route.config.after !== undefined);
    const limits = new Map(Object.entries(config.destinations).map(([origin, d]) => [origin, limitOf(origin, d)]));
    const free: ClaimRoute[] = [];
    const groups = new Map<string, LimitedGroup>();
    for (const route of this.#byKey.values()) {
      const claimRoute: ClaimRoute = {
        source: route.source,
        action: route.action,
        destination: route.destination,
        lookupDestination: route.lookup?.destination ?? null,
        ...outcomeRuleOf(route.config),
        leaseMs: route.leaseMs,
      };
      const limiting = (origins: (string | undefined)[]) =>
        [...new Set(origins)].filter((o): o is string => o !== undefined && limits.has(o)).sort();
      const claimUnder = (under: string[], claim: ClaimRoute) => {
        if (under.length === 0) return free.push(claim);
        route.limited = true;
        const key = under.join(' ');
        const group = groups.get(key) ?? { limits: under.map((origin) => limits.get(origin)!), routes: [] };
        group.routes.push(claim);
        groups.set(key, group);
      };
      // A pending task's claim is a send, to the action's origin; an unknown outcome's may also be a lookup, to the
      // lookup's. Claimed whole under both origins' limits, the sends of an action whose lookups go to a limited search
      // API waited for that API's limits too, though none of them goes there.
      const sends = limiting([route.destination]);
      const unknowns = limiting([route.destination, route.lookup?.destination]);
      if (sends.join(' ') === unknowns.join(' ')) claimUnder(sends, claimRoute);
      else {
        claimUnder(sends, { ...claimRoute, states: ['pending'] });
        claimUnder(unknowns, { ...claimRoute, states: ['outcome_unknown'] });
      }
    }
    this.forClaim = free;
    this.limitedGroups = [...groups.values()];
    this.rateLimits = [...limits.values()].filter((limit) => limit.perSecond !== null);
  }

  /** Claims only ever return configured actions, so a miss is a bug, not a state. */
  get(source: string, action: string): Route {
    const route = this.#byKey.get(routeKey(source, action));
    if (!route) throw new Error(`no configured action ${source}/${action}`);
    return route;
  }
}
