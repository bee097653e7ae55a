import type { Config } from '../config/schema.ts';
import { placeInOrder } from '../shape/order.ts';
import { deliveryJson, refreezeUrls, reshape } from '../shape/reshape.ts';
import type { Transforms } from '../shape/transforms.ts';
import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../ids.ts';
import { retryShaped, retryTask, shapeSource, type Decider, type OperatorOutcome } from '../store/atomic/operator.ts';
import { replayTask } from '../store/atomic/replay.ts';
import type { Store } from '../store/connect.ts';

export interface RetryDeps {
  store: Store;
  config: Config;
  transforms: Transforms;
}

/**
 * A person's retry. A task whose transform failed was never sent and holds its delivery's bytes, not a body to
 * send: its transform, its URLs and its order are computed again first, with the action as the config has it now (fixed, most
 * often), and the retry goes only if that makes them. If it fails again, nothing changes and the error says why.
 */
export async function retryDecision(deps: RetryDeps, taskId: string, who: Decider): Promise<OperatorOutcome> {
  const outcome = await retryTask(deps.store.db, { taskId, ...who });
  if (outcome.done || !outcome.unshaped) return outcome;
  const task = await shapeSource(deps.store.db, taskId, 'unshaped');
  // Changed since, or purged by retention: the plain retry's answer says how it stands.
  if (task === null) return outcome;
  const action = deps.config.sources[task.source]?.actions[task.action];
  if (action === undefined) return { ...outcome, transformError: `${task.source}/${task.action} is no longer a configured action` };
  const shaped = await reshape(deps.transforms, task, taskId);
  if (shaped !== null && 'error' in shaped) return { ...outcome, transformError: shaped.error };
  const urls = refreezeUrls(action, task, shaped);
  if ('error' in urls) return { ...outcome, transformError: urls.error };
  const order = action.order ? placeInOrder(action.order, { ...task, json: deliveryJson(task) }, new Headers(task.headers)) : null;
  if (order !== null && 'error' in order) return { ...outcome, transformError: order.error };
  return retryShaped(deps.store.db, { taskId, bodySha256: task.bodySha256, shaped, urls, order, approval: action.approval === 'required', ...who });
}

/**
 * A person's replay. A task whose body its action's transform made (from its delivery's bytes, kept beside it) is
 * shaped again for its replay, with the replay's own ID as `$taskId` and the action as the config has it now: sent
 * again as it was, a body naming the original's ID as its external ID would be found by a lookup for the original,
 * not the replay. Any other task is replayed with its bytes as they are.
 */
export async function replayDecision(
  deps: RetryDeps,
  taskId: string,
  input: { after?: string | null | undefined } & Decider,
): Promise<OperatorOutcome<{ replay: string }>> {
  const source = await shapeSource(deps.store.db, taskId, 'shaped');
  if (source === null) return replayTask(deps.store.db, { taskId, ...input });
  if (deps.config.sources[source.source]?.actions[source.action] === undefined) {
    return { done: false, state: source.state, bodyPurged: false, transformError: `${source.source}/${source.action} is no longer a configured action` };
  }
  const id = `t_${randomUUID().replaceAll('-', '')}`;
  const shaped = await reshape(deps.transforms, source, id);
  if (shaped !== null && 'error' in shaped) return { done: false, state: source.state, bodyPurged: false, transformError: shaped.error };
  // The action has no transform now: the replay sends the delivery's bytes, as a task made now would.
  const content = shaped ?? { body: source.body, contentType: source.contentType, bodySha256: sha256Hex(source.body) };
  return replayTask(deps.store.db, { taskId, ...input, shaped: { id, ...content, sourceBody: shaped === null ? null : source.body } });
}
