import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../src/store/data-dir-lock.ts';
import { LAUNCHER, runCli, spawnGateway, type GatewayProcess } from '../support/process.ts';

// What the README promises a newcomer: `npm start` serves on embedded PGlite with the example config, and
// `oncehook send-sample` shows a delivery accepted, then deduplicated. Through the launcher `npm start` runs
// (the sources through tsx), not the run's compiled build the other e2e tests start.
describe('npm start on the embedded default', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oncehook-newcomer-'));
  const checkout = { bin: LAUNCHER };
  let gateway: GatewayProcess;

  beforeAll(async () => {
    gateway = await spawnGateway({ env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir, ONCEHOOK_CONFIG: undefined }, ...checkout });
  });
  afterAll(async () => {
    await gateway?.stop();
    // A clean stop gives the directory back.
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves /healthz and /readyz', async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toMatchObject({ ok: true });
    expect(gateway.output()).toContain('embedded PGlite');
  });

  it('accepts a signed sample, then answers its repeat as a duplicate', async () => {
    const send = (...extra: string[]) =>
      runCli(['send-sample', 'shop', '--url', gateway.url, '--json', '--event-id', '9001', ...extra], {}, checkout);
    const first = await send('--delivery-id', 'sample-1');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ decision: 'accepted', eventId: '9001' });

    const repeat = await send('--delivery-id', 'sample-1');
    expect(JSON.parse(repeat.stdout)).toMatchObject({ decision: 'duplicate_delivery' });

    const otherSubscription = await send('--delivery-id', 'sample-2');
    expect(JSON.parse(otherSubscription.stdout)).toMatchObject({ decision: 'duplicate_event' });
  });

  // PGlite keeps no lock of its own: a second `npm start` or `oncehook migrate` on a running gateway's directory
  // ran a second PostgreSQL on the same files. (A lock left by kill -9 is taken over: forward-kill.test.ts.)
  it('refuses a second process on its data directory, naming the one that has it', async () => {
    const env = { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir, ONCEHOOK_CONFIG: undefined };
    const refusal = `in use by process ${gateway.child.pid}`;
    await expect(spawnGateway({ env, ...checkout })).rejects.toThrow(refusal);
    const migrate = await runCli(['migrate'], env, checkout);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toContain(refusal);
    expect(migrate.stderr).not.toMatch(/^\s+at /m);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  });

  it('send-sample names an unknown source and exits non-zero', async () => {
    const result = await runCli(['send-sample', 'nope', '--url', gateway.url], {}, checkout);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no source "nope"');
  });
});
