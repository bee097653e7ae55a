import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../adapters/types.ts';
import { configSchema } from '../../../src/config/schema.ts';
import { Transforms } from '../../../src/shape/transforms.ts';
import { planTasks } from '../../../src/ingest/plan-tasks.ts';

const identity = (json: unknown): Identity => ({ deliveryId: 'd1', eventId: 'e1', topic: 'orders/create', occurredAt: null, json });

/** Plans a delivery of `source` (raw config) as ingest does, with the source's transforms compiled. */
function planner(source: object) {
  const config = configSchema.parse({ sources: { hub: source } });
  const transforms = new Transforms(config);
  return (identity: Identity, headers: Record<string, string> = {}) =>
    planTasks('hub', config.sources.hub!, { identity, headers }, new Headers(headers), transforms);
}

describe('planning tasks', () => {
  it('plans none for a notice about the hook, even where the task key names what a notice lacks', async () => {
    const plan = planner({
      adapter: 'github',
      secrets: ['s3cret'],
      taskKey: '{body:/issue/number}',
      actions: { crm: { url: 'https://crm.example' }, mail: { url: 'https://mail.example' } },
    });
    const ping = { ...identity({ zen: 'Design for failure.' }), topic: 'ping', informational: true };
    expect(await plan(ping)).toEqual({ tasks: [], skipped: [] });
    const issue = { ...identity({ issue: { number: 1347 } }), topic: 'issues' };
    expect((await plan(issue)).tasks.map((task) => task.action).sort()).toEqual(['crm', 'mail']);
  });

  it('lists each action that makes no task with why: its topics, or its filter', async () => {
    const plan = planner({
      adapter: 'shopify',
      secrets: ['s3cret'],
      actions: {
        paid: { url: 'https://crm.example', topics: ['orders/paid'] },
        large: { url: 'https://crm.example', filter: { body: { total: { $gte: 100 } } } },
        acme: { url: 'https://crm.example', filter: { headers: { 'X-Shop': 'acme' } } },
        all: { url: 'https://crm.example' },
      },
    });
    const planned = await plan(identity({ total: 40 }), { 'x-shop': 'globex' });
    expect(planned.tasks.map((task) => task.action)).toEqual(['all']);
    expect(planned.skipped).toEqual([
      { action: 'paid', reason: 'topic', detail: 'topic: "orders/create" is not one of ["orders/paid"]' },
      { action: 'large', reason: 'filtered', detail: 'body.total: 40 is not >= 100' },
      { action: 'acme', reason: 'filtered', detail: 'headers.x-shop: "globex" is not "acme"' },
    ]);
    const noTopic = await plan({ ...identity({ total: 400 }), topic: null }, { 'x-shop': 'acme' });
    expect(noTopic.skipped).toEqual([{ action: 'paid', reason: 'topic', detail: 'the delivery has no topic, and the action takes ["orders/paid"]' }]);
  });

  it('shapes a task\'s body with its action\'s transform, or plans it failed with the error', async () => {
    const plan = planner({
      adapter: 'shopify',
      secrets: ['s3cret'],
      actions: {
        shaped: { url: 'https://crm.example', transform: '{"id": $taskId, "who": $headers.`x-shop`, "total": $number(total)}', approval: 'required' },
        raw: { url: 'https://crm.example' },
      },
    });
    const { tasks } = await plan(identity({ total: '12.5' }), { 'x-shop': 'acme' });
    const shaped = tasks.find((task) => task.action === 'shaped')!;
    expect(shaped.state).toBe('awaiting_approval');
    expect(JSON.parse(Buffer.from(shaped.shaped!.body).toString())).toEqual({ id: shaped.id, who: 'acme', total: 12.5 });
    expect(shaped.shaped!.contentType).toBe('application/json');
    expect(tasks.find((task) => task.action === 'raw')).not.toHaveProperty('shaped');
    const failed = (await plan(identity({ total: 'lots' }))).tasks.find((task) => task.action === 'shaped')!;
    expect(failed.state).toBe('failed');
    expect(failed.shaped).toBeUndefined();
    expect(failed.transformError).toMatch(/Unable to cast value to a number/);
  });
});
