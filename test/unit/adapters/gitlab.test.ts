import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gitlab } from '../../../adapters/gitlab.ts';
import { gitlabDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withHeader } from './fixtures.ts';

// GitLab publishes no verifying library: its docs' "Delivery headers" table and push event payload are the example.
const TOKEN = 'gitlab-secret-token';
const adapter = gitlab.adapter({ secrets: [TOKEN] });
const PUSH = { object_kind: 'push', event_name: 'push', ref: 'refs/heads/main', checkout_sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7', project_id: 15 };
const IDS = { eventUuid: '13792a34-cac6-4fda-95a8-c58e00a3954e', idempotencyKey: 'f5e5f430-f57b-4e6e-9fac-d9128cd7232f' };

const request = (delivery: { headers: Record<string, string>; body: string }) => inbound(delivery.headers, delivery.body);
const bodyHash = (payload: object) => createHash('sha256').update(JSON.stringify(payload)).digest('hex').slice(0, 32);

describe('gitlab adapter', () => {
  it('names the delivery by its Idempotency-Key and the event by X-Gitlab-Event-UUID and the body', () => {
    expect(adapter.verify(request(gitlabDelivery(TOKEN, PUSH, IDS)))).toEqual({
      deliveryId: IDS.idempotencyKey,
      eventId: `${IDS.eventUuid}:${bodyHash(PUSH)}`,
      topic: 'push',
      occurredAt: null,
      json: PUSH,
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 10_000, signatureHeaders: ['x-gitlab-token'] });
  });

  it('gives a group hook the project hook\'s event, and a webhook set off by another a new one under the same UUID', () => {
    const project = adapter.verify(request(gitlabDelivery(TOKEN, PUSH, IDS)));
    const group = adapter.verify(request(gitlabDelivery(TOKEN, PUSH, { ...IDS, idempotencyKey: 'a9c3e0c1-0000-4000-8000-000000000001' })));
    expect(group.eventId).toBe(project.eventId);
    expect(group.deliveryId).not.toBe(project.deliveryId);
    // "Recursive webhooks (triggered by earlier webhooks) share the same value" of X-Gitlab-Event-UUID.
    const recursive = { object_kind: 'note', object_attributes: { id: 1244, note: 'answered by a bot' } };
    const answered = adapter.verify(request(gitlabDelivery(TOKEN, recursive, { ...IDS, idempotencyKey: 'b1', event: 'Note Hook' })));
    expect(answered.eventId).not.toBe(project.eventId);
    expect(answered.topic).toBe('note');
  });

  it('without an Idempotency-Key (before GitLab 17.4), takes the event for the delivery; without either, refuses 400', () => {
    const older = adapter.verify(request(gitlabDelivery(TOKEN, PUSH, { eventUuid: IDS.eventUuid })));
    expect(older.deliveryId).toBe(older.eventId);
    expect(adapter.verify(request(gitlabDelivery(TOKEN, PUSH, { idempotencyKey: 'k-1' })))).toMatchObject({ deliveryId: 'k-1', eventId: 'k-1' });
    expectInputError(() => adapter.verify(request(gitlabDelivery(TOKEN, PUSH))), 'missing_identity');
  });

  it('takes a system hook\'s event_name, or else X-Gitlab-Event, for the topic', () => {
    const system = adapter.verify(request(gitlabDelivery(TOKEN, { event_name: 'project_create' }, { ...IDS, event: 'System Hook' })));
    expect(system.topic).toBe('project_create');
    expect(adapter.verify(request(gitlabDelivery(TOKEN, { custom: 'template' }, { ...IDS, event: 'Push Hook' }))).topic).toBe('Push Hook');
  });

  it('compares the token with every configured secret, so one can be rotated, and refuses any other or none', () => {
    const rotating = gitlab.adapter({ secrets: ['old-token', TOKEN] });
    expect(rotating.verify(request(gitlabDelivery(TOKEN, PUSH, IDS))).deliveryId).toBe(IDS.idempotencyKey);
    expect(expectSignatureError(() => adapter.verify(request(gitlabDelivery('wrong-token', PUSH, IDS))))).toMatch(/X-Gitlab-Token is none of the configured secrets/);
    // A token that begins like the secret is no closer to it.
    expectSignatureError(() => adapter.verify(request(gitlabDelivery(`${TOKEN}x`, PUSH, IDS))));
    expectSignatureError(() => adapter.verify(request(gitlabDelivery(TOKEN.slice(0, -1), PUSH, IDS))));
    const missing = withHeader(request(gitlabDelivery(TOKEN, PUSH, IDS)), 'x-gitlab-token', null);
    expect(expectSignatureError(() => adapter.verify(missing))).toMatch(/missing X-Gitlab-Token/);
  });

  it('refuses a verified body that is not JSON', () => {
    expectInputError(() => adapter.verify(inbound(gitlabDelivery(TOKEN, PUSH, IDS).headers, 'not json')), 'malformed_body');
  });
});
