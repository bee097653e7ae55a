/**
 * The secrets end-to-end tests' common part: a real process at the most verbose log level with a shop source whose
 * secrets come from the environment, real traffic through it, then a full dump and every log line searched.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { post, shopifyDelivery } from './deliveries.ts';
import type { TestDatabase } from './engine.ts';
import { spawnGateway, type GatewayProcess } from './process.ts';

export const SENDER_SECRET = 'sender-secret-9f8e7d6c5b4a';
export const OLD_SECRET = 'rotated-out-secret-1a2b3c4d';
export const ADMIN_TOKEN = 'admin-token-0a1b2c3d4e5f';

/**
 * A gateway whose source `shop` takes `actions`, signed with SENDER_SECRET or the rotated-out OLD_SECRET, each named
 * by the config and given by the environment, as are the admin token and `env` (the actions' credentials).
 */
export async function spawnSecretsGateway(database: TestDatabase, actions: object, env: Record<string, string>, config: object = {}): Promise<GatewayProcess> {
  const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-secrets-')), 'config.json');
  writeFileSync(configFile, JSON.stringify({ ...config, sources: { shop: { adapter: 'shopify', secrets: ['${SHOP_SECRET}', '${SHOP_OLD_SECRET}'], actions } } }));
  return spawnGateway({
    args: ['--config', configFile],
    env: {
      DATABASE_URL: database.url,
      LOG_LEVEL: 'trace',
      SHOP_SECRET: SENDER_SECRET,
      SHOP_OLD_SECRET: OLD_SECRET,
      ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN,
      ...env,
    },
  });
}

/**
 * Accepted, duplicate and forged deliveries (under both secrets), and an admin request with the right token and
 * one with a wrong one. Returns the signatures the deliveries carried.
 */
export async function sendAcceptedDuplicateForged(url: string): Promise<string[]> {
  const signatures: string[] = [];
  for (const [i, secret] of [SENDER_SECRET, OLD_SECRET, SENDER_SECRET, 'forged'].entries()) {
    const delivery = shopifyDelivery({ eventId: `e-secret-${i % 3}`, webhookId: `w-${i % 3}`, secret });
    signatures.push(delivery.headers['x-shopify-hmac-sha256']!);
    const answer = await post(url, 'shop', delivery);
    expect(answer.status).toBe(secret === 'forged' ? 401 : 200);
  }
  await fetch(`${url}/api/tasks`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  await fetch(`${url}/api/tasks`, { headers: { authorization: 'Bearer wrong-token' } });
  return signatures;
}

/**
 * Stops the gateway, then expects neither the database's data nor anything it logged to hold any of the sender's
 * secrets, the admin tokens tried, or `needles`. Returns the logs, for what a test expects them to hold besides.
 */
export async function expectNoSecretKept(database: TestDatabase, gateway: GatewayProcess, needles: string[]): Promise<string> {
  const dump = execFileSync('pg_dump', ['--data-only', database.url!], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  expect(dump).toContain('e-secret-0');
  // Log lines are written after the answers they describe: read them once the process has ended.
  await gateway.stop();
  if (!gateway.child.stdout!.readableEnded) await once(gateway.child.stdout!, 'end');
  const logs = gateway.output();
  expect(logs).toContain('delivery recorded');
  for (const needle of [SENDER_SECRET, OLD_SECRET, ADMIN_TOKEN, 'wrong-token', ...needles]) {
    expect(dump, 'database dump').not.toContain(needle);
    expect(logs, 'log output').not.toContain(needle);
  }
  return logs;
}
