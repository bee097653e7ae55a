import { parseJson } from '../../adapters/verify.ts';
import type { Config } from '../config/schema.ts';
import type { Transforms } from '../shape/transforms.ts';
import { retryShaped, retryTask, unshapedTask, type Decider, type OperatorOutcome } from '../store/atomic/operator.ts';
import type { Store } from '../store/connect.ts';

export interface RetryDeps {
  store: Store;
  config: Config;
  transforms: Transforms;
}

/**
 * A person's retry. A task whose transform failed was never sent and holds its delivery's bytes, not a body to
 * send: its transform is computed again first, with the action as the config has it now (fixed, most often), and
 * the retry goes only if that makes a body. If it fails again, nothing changes and the error says why.
 */
export async function retryDecision(deps: RetryDeps, taskId: string, who: Decider): Promise<OperatorOutcome> {
  const outcome = await retryTask(deps.store.db, { taskId, ...who });
  if (outcome.done || !outcome.unshaped) return outcome;
  const task = await unshapedTask(deps.store.db, taskId);
  // Changed since, or purged by retention: the plain retry's answer says how it stands.
  if (task === null) return outcome;
  const action = deps.config.sources[task.source]?.actions[task.action];
  if (action === undefined) return { ...outcome, transformError: `${task.source}/${task.action} is no longer a configured action` };
  let json: unknown;
  try {
    json = parseJson(task.body);
  } catch {
    json = undefined;
  }
  const identity = { deliveryId: task.deliveryId, eventId: task.eventId, topic: task.topic, occurredAt: null, json };
  const shaped = await deps.transforms.shape(task.source, task.action, { identity, headers: task.headers, taskId });
  if (shaped !== null && 'error' in shaped) return { ...outcome, transformError: shaped.error };
  return retryShaped(deps.store.db, { taskId, bodySha256: task.bodySha256, shaped, approval: action.approval === 'required', ...who });
}
