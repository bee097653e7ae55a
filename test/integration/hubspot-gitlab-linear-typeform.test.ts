/**
 * The hubspot, gitlab, linear and typeform adapters through the real server and database: what each sender's
 * retries and duplicates become, and what a wrong secret records (nothing).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi } from '../support/admin.ts';
import { post } from '../support/deliveries.ts';
import type { Downstream } from '../support/downstream.ts';
import { taskIn, waitFor } from '../support/forwarding.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startSenderGateway } from '../support/sender-gateway.ts';
import { gitlabDelivery, hubspotDelivery, linearDelivery, typeformDelivery } from '../support/signers.ts';

const HUBSPOT_SECRET = 'hubspot-client-secret-for-tests';
// Not the test server's address: what HubSpot signs is the public URL, whatever the gateway listens on.
const PUBLIC_URL = 'https://hooks.example.com';
const GITLAB_TOKEN = 'gitlab-secret-token-for-tests';
const LINEAR_SECRET = 'linear-signing-secret-for-tests';
const TYPEFORM_SECRET = 'typeform-secret-for-tests';
let gateway: TestGateway;
let downstream: Downstream;

beforeAll(async () => {
  ({ gateway, downstream } = await startSenderGateway((action) => ({
    crm: { adapter: 'hubspot', secrets: [HUBSPOT_SECRET], publicUrl: PUBLIC_URL, actions: { contacts: { ...action('/contacts'), topics: ['contact.creation'] } } },
    code: { adapter: 'gitlab', secrets: [GITLAB_TOKEN], actions: { ci: action('/ci') } },
    issues: { adapter: 'linear', secrets: [LINEAR_SECRET], actions: { triage: action('/triage') } },
    forms: { adapter: 'typeform', secrets: [TYPEFORM_SECRET], actions: { leads: action('/leads') } },
  })));
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

const api = () => adminApi(gateway.url);
const contact = (eventId: number, subscriptionType = 'contact.creation') => ({
  eventId,
  subscriptionId: 12345,
  portalId: 62515,
  appId: 54321,
  occurredAt: 1764669600000 + eventId,
  subscriptionType,
  attemptNumber: 0,
  objectId: 100 + eventId,
  changeSource: 'CRM',
});

describe('a HubSpot list of events', () => {
  it('makes one event per item, each with its own tasks sending its own JSON', async () => {
    const created = contact(1);
    const changed = { ...contact(2, 'contact.propertyChange'), propertyName: 'email', propertyValue: 'a@example.com' };
    const first = await post(gateway.url, 'crm', hubspotDelivery(HUBSPOT_SECRET, `${PUBLIC_URL}/in/crm`, [created, changed]));
    expect(first.status).toBe(200);
    expect(first.json.items.map((i: any) => [i.eventId, i.decision, i.tasks.length])).toEqual([
      ['62515:12345:1', 'accepted', 1],
      ['62515:12345:2', 'accepted', 0],
    ]);
    await taskIn(gateway.store.db, first.json.items[0].tasks[0].id, 'succeeded');
    expect(JSON.parse(downstream.requests('/contacts')[0]!.body.toString())).toEqual(created);
  });

  it("deduplicates a resent list item by item: HubSpot's retry of one, beside a new one", async () => {
    const retried = { ...contact(1), attemptNumber: 1 };
    const again = await post(gateway.url, 'crm', hubspotDelivery(HUBSPOT_SECRET, `${PUBLIC_URL}/in/crm`, [retried, contact(3)]));
    expect(again.status).toBe(200);
    expect(again.json.decision).toBe('accepted');
    expect(again.json.items.map((i: any) => [i.eventId, i.decision])).toEqual([
      ['62515:12345:1', 'duplicate_delivery'],
      ['62515:12345:3', 'accepted'],
    ]);
    // The retried item names the task the first list made, already done: no second effect.
    expect(again.json.items[0].tasks).toMatchObject([{ action: 'contacts', state: 'succeeded' }]);
    await waitFor(() => downstream.requests('/contacts').length === 2 || undefined);
    expect(downstream.effects('/contacts')).toHaveLength(2);
    // Every item is a receipt of its own: two from the first list, two from the second.
    expect((await api()('/api/deliveries?source=crm&limit=10')).json.items).toHaveLength(4);
  });

  it('refuses a list signed over another URL, or with another secret, and records nothing', async () => {
    const before = (await api()('/api/deliveries?source=crm&limit=50')).json.items.length;
    const otherHost = await post(gateway.url, 'crm', hubspotDelivery(HUBSPOT_SECRET, `${gateway.url}/in/crm`, [contact(4)]));
    expect(otherHost.status).toBe(401);
    expect(otherHost.json.error.message).toContain(`POST ${PUBLIC_URL}/in/crm`);
    expect((await post(gateway.url, 'crm', hubspotDelivery('not the secret', `${PUBLIC_URL}/in/crm`, [contact(4)]))).status).toBe(401);
    expect((await api()('/api/deliveries?source=crm&limit=50')).json.items).toHaveLength(before);
  });
});

describe('a GitLab webhook', () => {
  const push = { object_kind: 'push', ref: 'refs/heads/main', checkout_sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7', project: { id: 15 } };

  it('is taken with the secret token, and refused with another or none, recording nothing', async () => {
    const ids = { eventUuid: randomUUID(), idempotencyKey: randomUUID() };
    const wrong = await post(gateway.url, 'code', gitlabDelivery('another-token', push, ids));
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.message).toMatch(/X-Gitlab-Token is none of the configured secrets/);
    const none = gitlabDelivery(GITLAB_TOKEN, push, ids);
    delete none.headers['x-gitlab-token'];
    expect((await post(gateway.url, 'code', none)).status).toBe(401);
    expect((await api()('/api/deliveries?source=code')).json.items).toEqual([]);

    const accepted = await post(gateway.url, 'code', gitlabDelivery(GITLAB_TOKEN, push, ids));
    expect(accepted.status).toBe(200);
    expect(accepted.json).toMatchObject({ decision: 'accepted', deliveryId: ids.idempotencyKey, tasks: [{ action: 'ci' }] });
    // The token is kept with the delivery's headers only as [redacted].
    const stored = (await api()(`/api/deliveries/${accepted.json.receipt}`)).json;
    expect(JSON.stringify(stored)).not.toContain(GITLAB_TOKEN);
  });

  it("takes a resend (same Idempotency-Key) for the delivery, and the group hook's copy for the event", async () => {
    const eventUuid = randomUUID();
    const key = randomUUID();
    expect((await post(gateway.url, 'code', gitlabDelivery(GITLAB_TOKEN, { ...push, ref: 'refs/heads/next' }, { eventUuid, idempotencyKey: key }))).json.decision).toBe('accepted');
    expect((await post(gateway.url, 'code', gitlabDelivery(GITLAB_TOKEN, { ...push, ref: 'refs/heads/next' }, { eventUuid, idempotencyKey: key }))).json.decision).toBe('duplicate_delivery');
    const group = await post(gateway.url, 'code', gitlabDelivery(GITLAB_TOKEN, { ...push, ref: 'refs/heads/next' }, { eventUuid, idempotencyKey: randomUUID() }));
    expect(group.json.decision).toBe('duplicate_event');
  });
});

describe('Linear and Typeform retries', () => {
  it("take Linear's retry, signed again under a new delivery, for the same event", async () => {
    const change = { action: 'update', type: 'Issue', createdAt: '2026-12-01T10:00:00.000Z', data: { id: randomUUID(), title: 'x' } };
    const first = await post(gateway.url, 'issues', linearDelivery(LINEAR_SECRET, change, randomUUID()));
    expect(first.json).toMatchObject({ decision: 'accepted', tasks: [{ action: 'triage' }] });
    const retry = await post(gateway.url, 'issues', linearDelivery(LINEAR_SECRET, change, randomUUID(), Date.now() + 500));
    expect(retry.json.decision).toBe('duplicate_event');
    expect((await post(gateway.url, 'issues', linearDelivery(LINEAR_SECRET, change, randomUUID(), Date.now() - 61_000))).status).toBe(401);
  });

  it("take Typeform's retry of the same signed body for the same delivery", async () => {
    const response = { event_id: `01K${randomUUID()}`, event_type: 'form_response', form_response: { form_id: 'V5UCKg7t', token: 't1', submitted_at: '2026-12-01T10:00:00Z' } };
    const delivery = typeformDelivery(TYPEFORM_SECRET, response);
    expect((await post(gateway.url, 'forms', delivery)).json).toMatchObject({ decision: 'accepted', tasks: [{ action: 'leads' }] });
    expect((await post(gateway.url, 'forms', delivery)).json.decision).toBe('duplicate_delivery');
    expect((await post(gateway.url, 'forms', typeformDelivery('another secret', response))).status).toBe(401);
  });
});
