import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnGateway, type GatewayProcess } from '../support/process.ts';

// What the README promises a newcomer: `npm start` serves on embedded PGlite with the example config, and
// `oncehook send-sample` shows a delivery accepted, then deduplicated.
describe('npm start on the embedded default', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oncehook-newcomer-'));
  let gateway: GatewayProcess;

  beforeAll(async () => {
    gateway = await spawnGateway({ env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir, ONCEHOOK_CONFIG: undefined } });
  });
  afterAll(async () => {
    await gateway?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves /healthz and /readyz', async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toMatchObject({ ok: true });
    expect(gateway.output()).toContain('embedded PGlite');
  });

  it('accepts a signed sample, then answers its repeat as a duplicate', async () => {
    const send = (...extra: string[]) =>
      runCli(['send-sample', 'shop', '--url', gateway.url, '--json', '--event-id', '9001', ...extra]);
    const first = await send('--delivery-id', 'sample-1');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ decision: 'accepted', eventId: '9001' });

    const repeat = await send('--delivery-id', 'sample-1');
    expect(JSON.parse(repeat.stdout)).toMatchObject({ decision: 'duplicate_delivery' });

    const otherSubscription = await send('--delivery-id', 'sample-2');
    expect(JSON.parse(otherSubscription.stdout)).toMatchObject({ decision: 'duplicate_event' });
  });

  it('send-sample names an unknown source and exits non-zero', async () => {
    const result = await runCli(['send-sample', 'nope', '--url', gateway.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no source "nope"');
  });
});
