import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.ts';
import { Admission } from '../../../src/ingest/admission.ts';

const source = (extra: object = {}) => ({ adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } }, ...extra });
const admission = () =>
  new Admission(configSchema.parse({ limits: { maxInFlight: 2 }, sources: { open: source({ maxBodiesReading: 2 }), shop: source() } }));

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
});
