/**
 * The peer's forwarding side, in the same process as its route: pg-boss workers fetch jobs in batches, forward each
 * with fetch, and pg-boss marks the batch done when every request of it was answered 2xx.
 */
import type PgBoss from 'pg-boss';
import { Agent, fetch } from 'undici';
import type { ForwardJob } from './app.ts';
import { PEER_QUEUE, type PeerSpec } from './protocol.ts';

/** Starts the workers; the returned function closes their connections once pg-boss has stopped. */
export async function startForwarding(boss: PgBoss, spec: PeerSpec): Promise<() => Promise<void>> {
  const dispatcher = new Agent({ connections: spec.connections });
  const url = `${spec.downstreamOrigin}/crm`;
  const forward = async (job: PgBoss.Job<ForwardJob>) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': job.id },
      body: job.data.body,
      dispatcher,
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`downstream answered ${response.status}`);
  };
  for (let i = 0; i < spec.workers; i++) {
    await boss.work<ForwardJob>(PEER_QUEUE, { batchSize: spec.batchSize, pollingIntervalSeconds: spec.pollingIntervalSeconds }, async (jobs) => {
      await Promise.all(jobs.map(forward));
    });
  }
  return () => dispatcher.close();
}
