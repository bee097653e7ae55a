import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

  // PGlite's initdb grows its WebAssembly memory, which never shrinks: run in the gateway's own thread, the
  // first start on a new directory stayed at ~860 MiB resident for its life; with initdb in a worker, ~530.
  it('does not keep the initdb of a new directory in its memory', () => {
    const status = readFileSync(`/proc/${gateway.child.pid}/status`, 'utf8');
    const residentKiB = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)![1]);
    expect(residentKiB / 1024).toBeLessThan(700);
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
