import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.ts';
import { Admission } from '../../../src/ingest/admission.ts';

const source = (extra: object = {}) => ({ adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } }, ...extra });
const configOf = (shop: object = {}, maxInFlight = 2) =>
  configSchema.parse({ limits: { maxInFlight }, sources: { open: source({ maxBodiesReading: 2 }), shop: source(shop) } });
const admission = () => new Admission().for(configOf());
const limited = (perSecond: number, burst: number) => ({ rateLimit: { perSecond, burst } });

/** How many of `sourceId`'s bodies a gate admits in a row before a 429, each read released at once. */
function admittedInARow(gate: ReturnType<Admission['for']>, sourceId: string): number {
  for (let admitted = 0; admitted < 1000; admitted++) {
    try {
      gate.toRead(sourceId)();
    } catch (error) {
      expect(error).toMatchObject({ status: 429, code: 'rate_limited' });
      return admitted;
    }
  }
  return Infinity;
}

describe('admission', () => {
  it("turns a source's bodies away past its own cap, 503 source_busy, and no other source's", () => {
    const door = admission();
    const reading = [door.toRead('open'), door.toRead('open')];
    expect(() => door.toRead('open')).toThrow(expect.objectContaining({ status: 503, code: 'source_busy', headers: { 'retry-after': '1' } }));
    for (let i = 0; i < 10; i++) door.toRead('shop');
    reading[0]!();
    reading[0]!(); // released twice: counted once
    door.toRead('open');
    expect(() => door.toRead('open')).toThrow(expect.objectContaining({ code: 'source_busy' }));
  });

  it('takes no global slot for a body being read: only verified work counts against maxInFlight', () => {
    const door = admission();
    door.toRead('open');
    door.toRead('open');
    const working = [door.toWork(), door.toWork()];
    expect(() => door.toWork()).toThrow(expect.objectContaining({ status: 503, code: 'overloaded', headers: { 'retry-after': '1' } }));
    working[1]!();
    working[1]!();
    door.toWork();
    expect(() => door.toWork()).toThrow(expect.objectContaining({ code: 'overloaded' }));
  });

  describe('across a reload: the counts are the process\'s, each config its own limits', () => {
    it('keeps a source\'s spent burst: the new config\'s doors do not refill it', () => {
      const admission = new Admission();
      expect(admittedInARow(admission.for(configOf(limited(0.001, 5))), 'shop')).toBe(5);
      expect(admittedInARow(admission.for(configOf(limited(0.001, 5))), 'shop')).toBe(0);
    });

    it('caps the tokens kept at a lower new burst, starts a newly limited source full, and forgets a removed limit', () => {
      const admission = new Admission();
      admission.for(configOf(limited(0.001, 10)));
      expect(admittedInARow(admission.for(configOf(limited(0.001, 3))), 'shop')).toBe(3);
      expect(admittedInARow(admission.for(configOf()), 'shop')).toBe(Infinity);
      expect(admittedInARow(admission.for(configOf(limited(0.001, 4))), 'shop')).toBe(4);
    });

    it('counts the bodies and the deliveries the replaced app still holds against the new caps', () => {
      const admission = new Admission();
      const old = admission.for(configOf());
      const reading = [old.toRead('open'), old.toRead('open')];
      const working = [old.toWork(), old.toWork()];
      const next = admission.for(configOf({}, 3));
      expect(() => next.toRead('open')).toThrow(expect.objectContaining({ code: 'source_busy' }));
      next.toWork();
      expect(() => next.toWork()).toThrow(expect.objectContaining({ code: 'overloaded' }));
      reading[0]!();
      working[0]!();
      next.toRead('open');
      next.toWork();
      expect(() => old.toWork()).toThrow(expect.objectContaining({ code: 'overloaded' }));
    });
  });
});
