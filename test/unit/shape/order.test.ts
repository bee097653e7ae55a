import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { isoTimeMs, placeInOrder } from '../../../src/shape/order.ts';

const delivery = (json: unknown) => ({ eventId: 'e1', deliveryId: 'd1', topic: 'orders/updated', json });
const place = (by: string | undefined, json: unknown, headers: Record<string, string> = {}) =>
  placeInOrder({ key: '{body:/id}', by, mode: 'sequence' }, delivery(json), new Headers(headers));

describe("an action's order", () => {
  it('reads a JSON number as a number, an ISO-8601 time as its instant, anything else as text', () => {
    expect(place('{body:/version}', { id: 7, version: 12 })).toEqual({ key: '7', mode: 'sequence', number: 12, text: null, shown: '12' });
    const atNoon = Date.UTC(2026, 11, 7, 12);
    expect(place('{body:/updated_at}', { id: 7, updated_at: '2026-12-07T07:00:00-05:00' })).toMatchObject({
      number: atNoon,
      text: null,
      shown: '2026-12-07T07:00:00-05:00',
    });
    expect(place('{body:/updated_at}', { id: 7, updated_at: '2026-12-07T12:00:00.000Z' })).toMatchObject({ number: atNoon });
    // A header is text, even of digits: "10" comes before "9".
    expect(place('{header:x-seq}', { id: 7 }, { 'x-seq': '10' })).toMatchObject({ number: null, text: '10' });
    expect(place('v{body:/version}', { id: 7, version: 3 })).toMatchObject({ number: null, text: 'v3' });
    expect(place(undefined, { id: 7 })).toEqual({ key: '7', mode: 'sequence', number: null, text: null, shown: null });
  });

  it('takes a time without a zone as UTC, so every instance reads one instant', () => {
    expect(isoTimeMs('2026-12-07T12:00:00')).toBe(Date.UTC(2026, 11, 7, 12));
    expect(isoTimeMs('2026-12-07')).toBe(Date.UTC(2026, 11, 7));
    expect(isoTimeMs('2026-13-07T12:00:00Z')).toBeNull();
    expect(isoTimeMs('last tuesday')).toBeNull();
  });

  it('says which part the delivery lacks', () => {
    expect(place('{body:/updated_at}', { id: 7 })).toEqual({ error: 'order.by needs {body:/updated_at}, which this delivery does not have' });
    expect(place('{body:/updated_at}', { updated_at: 1 })).toEqual({ error: 'order.key needs {body:/id}, which this delivery does not have' });
    expect(place('{body:/at}', { id: 7, at: { nested: true } })).toEqual({ error: "order.by's {body:/at} is an object, not a string or a number" });
  });

  it('is refused at config load without a placeholder or with an unknown mode', () => {
    const config = (order: object) =>
      JSON.stringify({ sources: { shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'https://crm.example/x', order } } } } });
    expect(() => parseConfig(config({ key: 'all', mode: 'sequence' }), 'test')).toThrow(/order\.key.*names no placeholder, so every task would be about one entity/s);
    expect(() => parseConfig(config({ key: '{body:/id}', mode: 'fifo' }), 'test')).toThrow(/order\.mode/);
    expect(parseConfig(config({ key: '{body:/id}', by: '{body:/updated_at}', mode: 'latest' }), 'test').config.sources.shop!.actions.crm!.order).toEqual({
      key: '{body:/id}',
      by: '{body:/updated_at}',
      mode: 'latest',
    });
  });
});
