import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shopConfig } from './deliveries.ts';
import { startDownstream, type Downstream } from './downstream.ts';
import { spawnGateway, type GatewayProcess } from './process.ts';

/**
 * A real `oncehook serve` on its own PGlite, with admin tokens, in front of a real downstream whose `hang`
 * action never answers: with no idempotency key and no lookup, each of its tasks lands in needs_review —
 * the case a person must settle. `ok` answers 201; `gated` sends there too, once a person approves.
 */
export interface HeldTaskRig {
  gateway: GatewayProcess;
  downstream: Downstream;
  close(): Promise<void>;
}

export async function startHeldTaskRig(tokens: Record<string, string>): Promise<HeldTaskRig> {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-admin-'));
  const downstream = await startDownstream();
  downstream.script('/hang', { otherwise: 'hang' });
  const backoff = { initialMs: 20, maxMs: 100 };
  // `hang` gives up soon, so its tasks reach a person quickly; `ok` waits long enough that a loaded machine's
  // slow answer is not taken for an unknown outcome, which would send the task to review too.
  const config = shopConfig({
    hang: { url: `${downstream.url}/hang`, topics: ['orders/hang'], timeoutMs: 300, backoff },
    ok: { url: `${downstream.url}/ok`, topics: ['orders/create'], timeoutMs: 5_000, backoff },
    gated: { url: `${downstream.url}/ok`, topics: ['orders/gated'], approval: 'required', timeoutMs: 5_000, backoff },
  });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const gateway = await spawnGateway({
    args: ['--config', join(dir, 'config.json')],
    env: {
      DATABASE_URL: undefined,
      ONCEHOOK_DATA_DIR: join(dir, 'data'),
      ONCEHOOK_ADMIN_TOKEN: undefined,
      ONCEHOOK_ADMIN_TOKENS: Object.entries(tokens).map(([label, token]) => `${label}:${token}`).join(','),
    },
  });
  return {
    gateway,
    downstream,
    async close() {
      await gateway.stop();
      await downstream.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

