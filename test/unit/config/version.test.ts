import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { configVersion } from '../../../src/config/version.ts';

const env = { SHOP_SECRET: 'first-secret-value', CRM_TOKEN: 'tok-123456789' };
const raw = {
  sources: {
    shop: {
      adapter: 'shopify',
      secrets: ['${SHOP_SECRET}'],
      actions: {
        crm: { url: 'https://crm.example/tasks?key=${CRM_TOKEN}', headers: { Authorization: 'Bearer ${CRM_TOKEN}' }, idempotency: 'key' },
      },
    },
  },
};
const version = (config: unknown, vars: Record<string, string> = env) => configVersion(parseConfig(JSON.stringify(config), 'test.json', vars).config);

describe('configVersion', () => {
  it('is the same for the same effective config, whatever order its keys are written in', () => {
    const reordered = { sources: { shop: { actions: raw.sources.shop.actions, secrets: raw.sources.shop.secrets, adapter: 'shopify' } } };
    expect(version(raw)).toMatch(/^[0-9a-f]{12}$/);
    expect(version(reordered)).toBe(version(raw));
  });

  it('leaves secrets out: a rotated secret or token keeps the version', () => {
    expect(version(raw, { SHOP_SECRET: 'second-secret-value', CRM_TOKEN: 'tok-987654321' })).toBe(version(raw));
  });

  it('changes with anything that changes behaviour, defaults included', () => {
    const moved = structuredClone(raw);
    moved.sources.shop.actions.crm.url = 'https://crm.example/v2/tasks?key=${CRM_TOKEN}';
    const slower = structuredClone(raw) as typeof raw & { sources: { shop: { actions: { crm: { timeoutMs?: number } } } } };
    slower.sources.shop.actions.crm.timeoutMs = 20_000;
    const explicitDefault = structuredClone(slower);
    explicitDefault.sources.shop.actions.crm.timeoutMs = 10_000;
    expect(new Set([version(raw), version(moved), version(slower)]).size).toBe(3);
    expect(version(explicitDefault)).toBe(version(raw));
  });
});
