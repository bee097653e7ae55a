import { Webhook } from 'standardwebhooks';
import type { adminApi } from './admin.ts';
import { startDownstream, type Downstream } from './downstream.ts';

/**
 * How often the e2e gateways look at the alert conditions (`--alert-round-ms`): a few times a second, so a test
 * waits for what a round makes, not for the product's round every five seconds. What a round decides is the same.
 */
export const TEST_ROUND_MS = 300;
export const TEST_ROUND_ARGS = ['--alert-round-ms', String(TEST_ROUND_MS)];

/** Rounds enough that a message made or sent a second time would have shown. */
export const severalRounds = () => new Promise((resolve) => setTimeout(resolve, 8 * TEST_ROUND_MS));

/** The secret json alerts are signed with in the e2e tests: every message carries `webhook-id`. */
export const ALERT_SIGNING = `whsec_${Buffer.from('the e2e alerts signing secret 32b').toString('base64')}`;

/**
 * What opens the alerts' conditions: `api` answers /rejects with a 422, so its task fails, and `refusing` answers
 * /refused with a 401, so its destination pauses.
 */
export async function startConditionTargets(): Promise<{ api: Downstream; refusing: Downstream }> {
  const [api, refusing] = await Promise.all([startDownstream(), startDownstream()]);
  api.script('/rejects', { otherwise: { status: 422 } });
  refusing.script('/refused', { otherwise: { status: 401 } });
  return { api, refusing };
}

/** An action of the shop source to `url` for `topic`, retried quickly. */
export const topicAction = (url: string, topic: string) => ({ url, topics: [topic], timeoutMs: 5000, backoff: { initialMs: 20, maxMs: 200 } });

/** A message as `GET /api/alerts` lists it: a task of source `_alerts`. */
export interface ListedMessage {
  id: string;
  alert: string;
  condition: string;
  type: string;
  state: string;
  attempts: number;
  lastError: string | null;
}

/** Every alert message the gateway made (a test makes far fewer than a page of 500). */
export async function listedMessages(api: ReturnType<typeof adminApi>): Promise<ListedMessage[]> {
  const answer = await api('/api/alerts?limit=500');
  if (answer.status !== 200) throw new Error(`GET /api/alerts answered ${answer.status}: ${JSON.stringify(answer.json)}`);
  if (answer.json.hasMore) throw new Error('more alert messages than a page: the test made more than it meant to');
  return answer.json.items as ListedMessage[];
}

/** Where each alert and condition stands: how many messages its sequence has reached. */
export async function alertSequences(api: ReturnType<typeof adminApi>): Promise<Map<string, number>> {
  const answer = await api('/api/alerts?limit=1');
  const sequences = new Map<string, number>();
  for (const alert of answer.json.alerts as { name: string; conditions: { condition: string; messages: number }[] }[]) {
    for (const c of alert.conditions) sequences.set(`${alert.name}/${c.condition}`, c.messages);
  }
  return sequences;
}

/** One request the alert endpoint received, verified with the Standard Webhooks library. */
export interface ReceivedAlert {
  webhookId: string;
  idempotencyKey: string | undefined;
  event: { type: string; alert: string; condition: string; count: number };
  body: string;
}

/** What the alert endpoint at `path` received, each request's signature verified (a bad one throws). */
export function receivedAlerts(endpoint: Downstream, path: string, secret = ALERT_SIGNING): ReceivedAlert[] {
  const webhook = new Webhook(secret);
  return endpoint.requests(path).map((request) => {
    const body = request.body.toString();
    const event = webhook.verify(body, request.headers) as ReceivedAlert['event'];
    return { webhookId: request.headers['webhook-id']!, idempotencyKey: request.headers['idempotency-key'], event, body };
  });
}

/** How many times each webhook-id arrived. */
export function arrivals(received: readonly ReceivedAlert[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of received) counts.set(r.webhookId, (counts.get(r.webhookId) ?? 0) + 1);
  return counts;
}
