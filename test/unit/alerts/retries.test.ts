import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { Verdict } from '../../../src/forward/classify.ts';
import { decide } from '../../../src/forward/decide.ts';
import { Routes } from '../../../src/forward/routes.ts';
import { ALERTS_SOURCE } from '../../../src/store/atomic/alerts.ts';
import type { ClaimedTask } from '../../../src/store/atomic/claim.ts';

const config = parseConfig(
  JSON.stringify({
    alerts: { ops: { url: 'http://alerts.test/hook', format: 'json', on: ['failed'] } },
    sources: { shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'http://crm.test/tasks' } } } },
  }),
  'test',
).config;
const routes = new Routes(config, 1000);
const refused: Verdict = { class: 'not_sent', status: null, error: 'not sent: connect ECONNREFUSED' };

const message = (attempts: number): ClaimedTask => ({
  id: 't_alert', source: ALERTS_SOURCE, action: 'ops', eventId: 'failed', topic: 'alert.opened', body: new Uint8Array(),
  contentType: 'application/json', attempts, lookups: 0, mode: 'send', claim: attempts, reason: null, priorState: 'pending', requestUrl: null, lookupUrl: null,
});

/** Refused attempt after refused attempt: how long the message waits in all, and how it ends. */
function refusedUntilSpent(route: ReturnType<Routes['get']>) {
  let waitedMs = 0;
  let longestMs = 0;
  for (let attempts = 1; ; attempts++) {
    const decision = decide(refused, message(attempts), route);
    if (decision.state !== 'pending') return { attempts, waitedMs, longestMs, state: decision.state };
    waitedMs += decision.delayMs;
    longestMs = Math.max(longestMs, decision.delayMs);
  }
}

afterEach(() => vi.restoreAllMocks());

describe("an alert message while its endpoint refuses connections", () => {
  // Each wait drawn at its mean (full jitter: half its ceiling): what a message can expect.
  it('is tried for hours, not the minute an action is, before it is given up', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const alert = refusedUntilSpent(routes.get(ALERTS_SOURCE, 'ops'));
    expect(alert.state).toBe('failed');
    expect(alert.waitedMs).toBeGreaterThan(3 * 3_600_000);
    // An action keeps its own default: about a minute, which an alert endpoint's outage easily outlasts.
    expect(refusedUntilSpent(routes.get('shop', 'crm')).waitedMs).toBeLessThan(120_000);
  });

  it('waits no more than five minutes between attempts, so it arrives soon after the endpoint is back', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999_999);
    expect(refusedUntilSpent(routes.get(ALERTS_SOURCE, 'ops')).longestMs).toBeLessThanOrEqual(300_000);
  });
});
