import { Webhook } from 'standardwebhooks';
import type { ActionConfig, Config } from '../config/schema.ts';
import type { ClaimRoute } from '../store/atomic/claim.ts';

/** One configured action as the forwarder uses it. */
export interface Route {
  source: string;
  action: string;
  config: ActionConfig;
  /** The action URL's origin: the pool, the cooldown and the pause belong to it. */
  destination: string;
  /** How long a claim holds a task: the whole request, then the grace a silent worker is given. */
  leaseMs: number;
  /** The signer made from `signingSecret`, when there is one. */
  signer: Webhook | null;
}

const routeKey = (source: string, action: string) => `${source}\0${action}`;

/** The routing table, from config: where each (source, action) goes and how its outcomes are settled. */
export class Routes {
  readonly #byKey = new Map<string, Route>();
  readonly forClaim: readonly ClaimRoute[];
  /** Whether any action waits for a sibling (`after`): a success may then make another task due. */
  readonly hasSteps: boolean;

  constructor(config: Config, leaseGraceMs: number) {
    for (const [source, sourceConfig] of Object.entries(config.sources)) {
      for (const [action, actionConfig] of Object.entries(sourceConfig.actions)) {
        this.#byKey.set(routeKey(source, action), {
          source,
          action,
          config: actionConfig,
          destination: new URL(actionConfig.url).origin,
          leaseMs: actionConfig.timeoutMs + leaseGraceMs,
          // The config's schema has checked that it decodes.
          signer: actionConfig.signingSecret === undefined ? null : new Webhook(actionConfig.signingSecret),
        });
      }
    }
    this.hasSteps = [...this.#byKey.values()].some((route) => route.config.after !== undefined);
    this.forClaim = [...this.#byKey.values()].map((route) => ({
      source: route.source,
      action: route.action,
      destination: route.destination,
      keyed: route.config.idempotency === 'key',
      keyRetentionMs: route.config.keyRetention,
      lookup: route.config.lookup !== undefined,
      maxAttempts: route.config.maxAttempts,
      leaseMs: route.leaseMs,
    }));
  }

  /** Claims only ever return configured actions, so a miss is a bug, not a state. */
  get(source: string, action: string): Route {
    const route = this.#byKey.get(routeKey(source, action));
    if (!route) throw new Error(`no configured action ${source}/${action}`);
    return route;
  }
}

