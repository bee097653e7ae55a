import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { Forwarder, type ForwarderDeps } from '../../../src/forward/forwarder.ts';
import { createLogger } from '../../../src/log.ts';
import { createMetrics } from '../../../src/metrics.ts';

afterEach(() => vi.useRealTimers());

describe('Forwarder.alive', () => {
  it('turns false once the loop has not finished a pass for several poll intervals', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const config = parseConfig(
      JSON.stringify({ sources: { shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'http://127.0.0.1:9/' } } } } }),
      'test',
    ).config;
    // Never started: nothing touches the store, and the loop never passes again.
    const store = { lane: () => ({ kind: 'pglite', db: {}, abandon: null }) } as unknown as ForwarderDeps['store'];
    const deps = { config, store, logger: createLogger('silent'), metrics: createMetrics() };
    const forwarder = new Forwarder(deps, { pollMs: 1000 });
    expect(forwarder.alive()).toBe(true);
    vi.advanceTimersByTime(7_000);
    expect(forwarder.alive()).toBe(true);
    vi.advanceTimersByTime(2_000);
    expect(forwarder.alive()).toBe(false);
  });
});
