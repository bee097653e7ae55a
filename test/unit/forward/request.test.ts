import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { parseConfig } from '../../../src/config/load.ts';
import { lookupRequest, sendRequest } from '../../../src/forward/request.ts';
import { Routes } from '../../../src/forward/routes.ts';
import type { ClaimedTask } from '../../../src/store/atomic/claim.ts';

const SIGNING = `whsec_${Buffer.from('a signing secret of 32 bytes!!!!').toString('base64')}`;

function routeOf(action: object) {
  const sources = { shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: action } } };
  return new Routes(parseConfig(JSON.stringify({ sources }), 'test').config, 1000).get('shop', 'crm');
}

function task(id: string, over: Partial<ClaimedTask> = {}): ClaimedTask {
  return {
    id, source: 'shop', action: 'crm', eventId: 'e1', topic: 'orders/create', body: Buffer.from('{"a":1}'), contentType: 'application/json',
    attempts: 2, lookups: 0, mode: 'send', claim: 1, reason: null, priorState: 'pending', requestUrl: null, lookupUrl: null, ...over,
  };
}

describe("a task's request", () => {
  it("names every header in lower case, the action's replacing a default and oncehook's its own, in the order first set", () => {
    const route = routeOf({
      url: 'https://crm.test/v1/tasks?source=hooks#part',
      idempotency: 'key',
      idempotencyHeader: 'X-Request-Key',
      headers: { 'User-Agent': 'crm-client/1', 'X-Api-Key': 'k1' },
    });
    const out = sendRequest(task('t_1'), route);
    expect(Object.entries(out.headers)).toEqual([
      ['user-agent', 'crm-client/1'],
      ['content-type', 'application/json'],
      ['x-api-key', 'k1'],
      ['x-request-key', 't_1'],
      ['oncehook-task-id', 't_1'],
      ['oncehook-attempt', '2'],
      ['oncehook-event-id', 'e1'],
      ['oncehook-source', 'shop'],
      ['oncehook-topic', 'orders/create'],
    ]);
    expect(out).toMatchObject({ method: 'POST', origin: 'https://crm.test', path: '/v1/tasks?source=hooks', timeoutMs: route.config.timeoutMs });
    expect(Buffer.from(out.body!).toString()).toBe('{"a":1}');
    // A fresh object each time: an OAuth 2.0 token is set on it.
    expect(sendRequest(task('t_1'), route).headers).not.toBe(out.headers);
  });

  it('fills {key} for each task, and goes to a frozen URL where the task has one', () => {
    const route = routeOf({ url: 'https://crm.test/tasks/{key}', idempotency: 'key' });
    expect(sendRequest(task('t_1'), route).path).toBe('/tasks/t_1');
    expect(sendRequest(task('t_2'), route).path).toBe('/tasks/t_2');
    const plain = routeOf({ url: 'https://crm.test/tasks', idempotency: 'key' });
    expect(sendRequest(task('t_3'), plain, 'https://other.test/orders/42?x=1')).toMatchObject({ origin: 'https://other.test', path: '/orders/42?x=1' });
    expect(sendRequest(task('t_3'), plain)).toMatchObject({ origin: 'https://crm.test', path: '/tasks' });
  });

  it('is signed over its exact bytes when the action has a signing secret, and its lookup over none', () => {
    const route = routeOf({ url: 'https://crm.test/tasks', idempotency: 'key', signingSecret: SIGNING, lookup: 'https://crm.test/tasks/{key}' });
    const out = sendRequest(task('t_1'), route);
    const verified = new Webhook(SIGNING).verify(Buffer.from(out.body!).toString(), out.headers);
    expect(verified).toEqual({ a: 1 });
    expect(out.headers['webhook-id']).toBe('t_1');
    const lookup = lookupRequest(task('t_1', { mode: 'lookup' }), route, route.lookup!);
    expect(lookup).toMatchObject({ method: 'GET', origin: 'https://crm.test', path: '/tasks/t_1', body: null });
    expect(lookup.headers).toMatchObject({ accept: 'application/json', 'oncehook-task-id': 't_1', 'webhook-id': 't_1' });
    expect(() => new Webhook(SIGNING).verify('', lookup.headers)).not.toThrow();
  });
});
