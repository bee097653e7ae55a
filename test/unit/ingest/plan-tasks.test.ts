import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../adapters/types.ts';
import { InputError } from '../../../src/errors.ts';
import { configSchema } from '../../../src/config/schema.ts';
import { Transforms } from '../../../src/shape/transforms.ts';
import { planTasks, renderTaskKey, taskKeyProblems } from '../../../src/ingest/plan-tasks.ts';

const identity = (json: unknown): Identity => ({ deliveryId: 'd1', eventId: 'e1', topic: 'orders/create', occurredAt: null, json });

describe('the task key', () => {
  it('renders placeholders from the identity, the headers and the body', () => {
    const headers = new Headers({ 'x-shop': 'acme' });
    expect(renderTaskKey('{header:x-shop}/{body:/order/id}/{topic}', identity({ order: { id: 42 } }), headers)).toBe('acme/42/orders/create');
  });

  it('refuses a body number past 2^53 rather than merge two business tasks into one', () => {
    // Both parse to 12345678901234567000.
    for (const id of ['12345678901234567891', '12345678901234567892']) {
      expect(() => renderTaskKey('{body:/id}', identity(JSON.parse(`{"id":${id}}`)), new Headers())).toThrow(InputError);
    }
    expect(renderTaskKey('{body:/id}', identity({ id: 9007199254740991 }), new Headers())).toBe('9007199254740991');
  });

  it('says what a body part of another type is, and calls missing only what is absent', () => {
    const render = (json: unknown) => () => renderTaskKey('{body:/order}', identity(json), new Headers());
    expect(render({ order: { id: 42 } })).toThrow(
      expect.objectContaining({ code: 'invalid_identity', message: "the task key's {body:/order} is an object, not a string or a number" }),
    );
    expect(render({ order: null })).toThrow(expect.objectContaining({ code: 'invalid_identity', message: expect.stringMatching(/is null, not/) }));
    expect(render({})).toThrow(expect.objectContaining({ code: 'missing_identity', message: expect.stringMatching(/does not have/) }));
  });

  it('names what is wrong with a template, for the config check', () => {
    expect(taskKeyProblems('{eventId}')).toEqual([]);
    expect(taskKeyProblems('{header:x-shop}:{body:/order/id}')).toEqual([]);
    // The misspelt placeholder is named; "no placeholder" would send the user looking for the wrong fault.
    expect(taskKeyProblems('{eventID}')).toEqual([expect.stringMatching(/^\{eventID\}: not a placeholder/)]);
    expect(taskKeyProblems('orders')).toEqual(['names no placeholder, so every delivery would be one task']);
    expect(taskKeyProblems('{body:id}-{eventId}')).toEqual(['{body:id}: not a JSON pointer like {body:/order/id}']);
    expect(taskKeyProblems('{header:X Order}-{eventId}')).toEqual(['{header:X Order}: not a header name']);
  });
});

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
