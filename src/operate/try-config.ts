import type { Config } from '../config/schema.ts';
import { planTasks } from '../ingest/plan-tasks.ts';
import type { NewTask } from '../store/atomic/record.ts';
import type { Db } from '../store/connect.ts';
import { recentReceipts, type MadeTask, type RecentReceipt } from '../store/queries/recent-receipts.ts';
import { isOrderError } from '../shape/order.ts';
import { deliveryJson } from '../shape/reshape.ts';
import { Transforms } from '../shape/transforms.ts';
import { shownUrl } from './task-request.ts';

/** One receipt where the tried config decides otherwise than the running one did. */
export interface Example {
  receipt: string;
  eventId: string;
  /** The task the running config made, or the tried one would make. */
  task: string;
  detail: string;
}

interface Kind {
  count: number;
  examples: Example[];
}

/** Per action of either config: what the tried config would make of the receipts, against what was made. */
export interface ActionTried {
  source: string;
  action: string;
  /** Tasks the tried config would make as the running one made them. */
  same: number;
  /** Tasks it would make that the running config did not. */
  made: Kind;
  /** Tasks the running config made that it would not. */
  notMade: Kind;
  /** Tasks both make, shaped otherwise: another task ID (its key), body, URL or place in order, or a transform that fails. */
  shapedDifferently: Kind;
}

export interface TryAnswer {
  /** The receipts tried: the newest accepted ones. */
  tried: number;
  /** Receipts whose bytes retention purged: not tried, counted. */
  notRetained: number;
  actions: ActionTried[];
}

/** The most receipts one try plans again: each may run a transform per action. */
export const MOST_TRIED = 10_000;
/** How many a try takes when not told: the newest thousand. */
export const DEFAULT_TRIED = 1000;

/** Examples kept of each kind of difference, per action. */
const EXAMPLES = 3;
/** Receipts planned at once: their transforms run in the transform processes meanwhile. */
const AT_ONCE = 32;

/**
 * The newest `last` accepted receipts through `tried`'s topics, filters, task keys, transforms and URL templates,
 * compared with the tasks the running config made of them. Reads only: nothing is sent, written or recorded.
 */
export async function tryConfig(db: Db, running: Config, tried: Config, options: { last: number; source?: string | undefined }): Promise<TryAnswer> {
  const receipts = await recentReceipts(db, options);
  const transforms = new Transforms(tried);
  const byAction = new Map<string, ActionTried>();
  const entry = (source: string, action: string) => {
    const key = `${source}/${action}`;
    let found = byAction.get(key);
    if (!found) {
      found = { source, action, same: 0, made: kind(), notMade: kind(), shapedDifferently: kind() };
      byAction.set(key, found);
    }
    return found;
  };
  let notRetained = 0;
  for (let at = 0; at < receipts.length; at += AT_ONCE) {
    const planned = await Promise.all(receipts.slice(at, at + AT_ONCE).map((receipt) => planAgain(receipt, tried, transforms)));
    for (const { receipt, plan } of planned) {
      if (plan === null) {
        notRetained++;
        continue;
      }
      compare(receipt, plan, running, tried, entry);
    }
  }
  const actions = [...byAction.values()].sort((a, b) => `${a.source}/${a.action}`.localeCompare(`${b.source}/${b.action}`));
  return { tried: receipts.length - notRetained, notRetained, actions };
}

const kind = (): Kind => ({ count: 0, examples: [] });

function note(into: Kind, example: Example): void {
  into.count++;
  if (into.examples.length < EXAMPLES) into.examples.push(example);
}

interface Replanned {
  tasks: NewTask[];
  /** Why each action of the tried config makes no task of it. */
  skipped: Map<string, string>;
}

/** What the tried config makes of a receipt; null when its bytes are no longer kept. */
async function planAgain(receipt: RecentReceipt, tried: Config, transforms: Transforms): Promise<{ receipt: RecentReceipt; plan: Replanned | null }> {
  if (receipt.body === null) return { receipt, plan: null };
  const source = tried.sources[receipt.source];
  if (source === undefined) return { receipt, plan: { tasks: [], skipped: new Map() } };
  const headers = receipt.headers ?? {};
  const content = {
    identity: { deliveryId: receipt.deliveryId, eventId: receipt.eventId, topic: receipt.topic, occurredAt: null, json: deliveryJson({ contentType: receipt.contentType, body: receipt.body }) },
    headers,
  };
  const plan = await planTasks(receipt.source, source, content, new Headers(headers), transforms);
  return { receipt, plan: { tasks: plan.tasks, skipped: new Map(plan.skipped.map((skip) => [skip.action, skip.detail])) } };
}

function compare(
  receipt: RecentReceipt,
  plan: Replanned,
  running: Config,
  tried: Config,
  entry: (source: string, action: string) => ActionTried,
): void {
  const made = new Map(receipt.tasks.map((task) => [task.action, task]));
  const would = new Map(plan.tasks.map((task) => [task.action, task]));
  const example = (task: string, detail: string): Example => ({ receipt: receipt.id, eventId: receipt.eventId, task, detail });
  for (const action of new Set([...made.keys(), ...would.keys()])) {
    const into = entry(receipt.source, action);
    const before = made.get(action);
    const after = would.get(action);
    if (before && !after) {
      const why = tried.sources[receipt.source] === undefined
        ? `the tried config has no source ${receipt.source}`
        : tried.sources[receipt.source]!.actions[action] === undefined
          ? `the tried config has no action ${action}`
          : (plan.skipped.get(action) ?? 'not made');
      note(into.notMade, example(before.id, why));
    } else if (after && !before) {
      note(into.made, example(after.id, failure(after) ?? 'made now, not by the running config'));
    } else if (before && after) {
      const changes = differences(receipt, before, after, running, tried);
      if (changes.length === 0) into.same++;
      else note(into.shapedDifferently, example(after.id, changes.join('; ')));
    }
  }
}

const failure = (task: NewTask): string | null =>
  task.transformError !== undefined
    ? `its transform fails: ${task.transformError}`
    : task.requestError !== undefined
      ? `its ${isOrderError(task.requestError) ? 'order' : 'url'} fails: ${task.requestError}`
      : null;

/** How the task the tried config makes differs from the one made: each difference in words, no secret in them. */
function differences(receipt: RecentReceipt, before: MadeTask, after: NewTask, running: Config, tried: Config): string[] {
  const said: string[] = [];
  if (before.id !== after.id) said.push(`another task key: ${before.id} → ${after.id}`);
  const failed = failure(after);
  if (failed !== null) {
    if (before.transformError === null) said.push(failed);
    return said;
  }
  const body = after.shaped?.bodySha256 ?? receipt.bodySha256;
  if (before.transformError !== null) said.push('its transform now makes a body');
  else if (body !== before.bodySha256) said.push(`another body (sha256 ${before.bodySha256.slice(0, 12)}… → ${body.slice(0, 12)}…)`);
  const wasTemplate = running.sources[receipt.source]?.actions[before.action]?.url;
  const template = tried.sources[receipt.source]!.actions[after.action]!.url;
  const url = after.requestUrl ?? template;
  const was = before.requestUrl ?? wasTemplate;
  if (was !== undefined && url !== was) said.push(`another url: ${shownUrl(was, wasTemplate ?? was)} → ${shownUrl(url, template)}`);
  said.push(...orderChanges(before.order, after.order));
  return said;
}

/** Where the task stands in its key's order, before and after: a task moved to another key waits behind others. */
function orderChanges(before: MadeTask['order'], after: NewTask['order']): string[] {
  if (before === null && after === undefined) return [];
  if (before === null) return [`now in order: key ${after!.key} (${after!.mode})`];
  if (after === undefined) return [`no longer in order (was key ${before.key})`];
  const said: string[] = [];
  if (before.key !== after.key) said.push(`another order key: ${before.key} → ${after.key}`);
  if (before.mode !== after.mode) said.push(`another order mode: ${before.mode} → ${after.mode}`);
  if (before.position !== after.shown) said.push(`another order position: ${before.position ?? 'arrival'} → ${after.shown ?? 'arrival'}`);
  return said;
}
