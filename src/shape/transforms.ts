import type { Identity } from '../../adapters/types.ts';
import { sha256Hex } from '../ids.ts';
import { compileTransform, runTransform, warmTransforms, type Transform } from './transform.ts';

/** A task's own bytes, as its action's transform made them. */
export interface Shaped {
  body: Uint8Array;
  contentType: string;
  bodySha256: string;
}

/** What an action's filter and transform read of a delivery: its body, its headers as recorded, its identities. */
export interface DeliveryContent {
  identity: Identity;
  /** The headers as stored with the receipt: signatures and credentials redacted, names lower-case. */
  headers: Record<string, string>;
}

/** What the transforms are compiled from: each source's actions, as the config has them. */
export interface ActionTransforms {
  sources: Record<string, { actions: Record<string, { transform?: string | undefined }> }>;
}

const key = (source: string, action: string) => `${source}\0${action}`;

/**
 * Every action's transform, compiled once when the gateway starts. Ingest shapes each new task's body with it,
 * and a person's retry of a task whose transform failed shapes it again with the config as it is then.
 */
export class Transforms {
  readonly #byAction = new Map<string, Transform>();

  constructor(config: ActionTransforms) {
    for (const [source, sourceConfig] of Object.entries(config.sources)) {
      for (const [action, actionConfig] of Object.entries(sourceConfig.actions)) {
        if (actionConfig.transform === undefined) continue;
        const compiled = compileTransform(actionConfig.transform);
        // The config's schema refuses a transform that does not compile; meeting one here is a bug.
        if (!compiled.ok) throw new Error(`${source}/${action}: the transform does not compile: ${compiled.message}`);
        this.#byAction.set(key(source, action), compiled.transform);
      }
    }
    const sources = new Set([...this.#byAction.keys()].map((one) => one.split('\0')[0]));
    if (sources.size > 0) void warmTransforms(sources.size);
  }

  /**
   * The task's body as the action's transform makes it, why it made none, or null when the action has none. `late`:
   * it could not start by `startBy` (a `performance.now()`), and nothing was evaluated.
   */
  async shape(
    source: string,
    action: string,
    delivery: DeliveryContent & { taskId: string },
    startBy?: number,
  ): Promise<Shaped | { error: string; late?: true } | null> {
    const transform = this.#byAction.get(key(source, action));
    if (transform === undefined) return null;
    const { identity } = delivery;
    const result = await runTransform(transform, identity.json, {
      headers: delivery.headers,
      topic: identity.topic,
      eventId: identity.eventId,
      deliveryId: identity.deliveryId,
      taskId: delivery.taskId,
      source,
      action,
    }, startBy);
    if (!result.ok) return result.late ? { error: result.error, late: true } : { error: result.error };
    return { body: result.bytes, contentType: 'application/json', bodySha256: sha256Hex(result.bytes) };
  }
}
