import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../adapters/types.ts';
import { InputError } from '../../../src/errors.ts';
import { renderTaskKey, taskKeyProblems } from '../../../src/shape/task-key.ts';

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
