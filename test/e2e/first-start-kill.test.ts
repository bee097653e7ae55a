import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { BIN, exitOf, REPO, spawnGateway } from '../support/process.ts';

// A first start extracts the cluster image into the new data directory. Killed while it does, the process must
// leave no directory PGlite takes for a cluster (PG_VERSION marks one), and the next start must make it whole.
describe('a first embedded start killed while it extracts its cluster', () => {
  const root = mkdtempSync(join(tmpdir(), 'oncehook-first-kill-'));
  const dataDir = join(root, 'data');
  const configFile = join(root, 'config.json');
  writeFileSync(configFile, JSON.stringify(shopConfig()));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('leaves no cluster behind, and the next start serves', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, ONCEHOOK_DATA_DIR: dataDir };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--config', configFile], { cwd: REPO, env, stdio: 'ignore' });
    const staging = join(dataDir, '.oncehook-new-cluster');
    const started = Date.now();
    while (!existsSync(staging) && child.exitCode === null && Date.now() - started < 30_000) await new Promise((resolve) => setTimeout(resolve, 2));
    child.kill('SIGKILL');
    await exitOf(child);
    expect(existsSync(staging), 'the kill came while the cluster was extracted').toBe(true);
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(false);

    const gateway = await spawnGateway({ args: ['--config', configFile], env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir } });
    try {
      expect(gateway.output()).toContain('its cluster came from the image shipped with oncehook');
      expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'after-the-kill' }))).json.decision).toBe('accepted');
    } finally {
      await gateway.stop();
    }
    expect(existsSync(staging)).toBe(false);
  });
});
