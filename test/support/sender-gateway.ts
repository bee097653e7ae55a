import { ADMIN_TOKEN } from './admin.ts';
import { startDownstream, type Downstream } from './downstream.ts';
import { startTestGateway, type TestGateway } from './gateway.ts';

/** An action forwarding to `path` of the downstream, with a short timeout and quick retries. */
export type ActionTo = (path: string) => { url: string; timeoutMs: number; backoff: { initialMs: number; maxMs: number } };

/**
 * The gateway of a file of sender tests, with the admin API on, and the one downstream its actions forward to:
 * retries come in milliseconds, so a test waits for a settled task briefly. `sources` makes the config's sources
 * from the downstream's actions.
 */
export async function startSenderGateway(sources: (action: ActionTo) => Record<string, object>): Promise<{ gateway: TestGateway; downstream: Downstream }> {
  const downstream = await startDownstream();
  const action: ActionTo = (path) => ({ url: `${downstream.url}${path}`, timeoutMs: 5000, backoff: { initialMs: 20, maxMs: 100 } });
  const gateway = await startTestGateway({ sources: sources(action) }, { adminToken: ADMIN_TOKEN });
  return { gateway, downstream };
}
