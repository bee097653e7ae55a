import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { Routes } from '../../../src/forward/routes.ts';
import { ALERTS_SOURCE } from '../../../src/store/atomic/alerts.ts';

const config = parseConfig(
  JSON.stringify({
    alerts: { ops: { url: 'http://alerts.test/hook', format: 'json', on: ['failed'] } },
    sources: { shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'http://crm.test/tasks', timeoutMs: 2500 } } } },
  }),
  'test',
).config;

describe("an alert message's timeout", () => {
  it("is an action's default, and its lease that and the grace", () => {
    const alert = new Routes(config, 300).get(ALERTS_SOURCE, 'ops');
    expect(alert.config.timeoutMs).toBe(10_000);
    expect(alert.leaseMs).toBe(10_300);
  });

  it('is shortened, lease and all, by --alert-timeout-ms, and no action with it', () => {
    const routes = new Routes(config, 300, 4000);
    expect(routes.get(ALERTS_SOURCE, 'ops')).toMatchObject({ config: { timeoutMs: 4000 }, leaseMs: 4300 });
    expect(routes.get('shop', 'crm')).toMatchObject({ config: { timeoutMs: 2500 }, leaseMs: 2800 });
  });
});
