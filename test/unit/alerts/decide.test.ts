import { describe, expect, it } from 'vitest';
import { decide, look, type Look } from '../../../src/alerts/decide.ts';
import { alertEvent, slackText } from '../../../src/alerts/messages.ts';
import type { Observed } from '../../../src/store/atomic/alerts.ts';

const T0 = new Date('2026-12-02T10:00:00Z');
const after = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const MINUTE = 60_000;
const closed = { open: false, lastSentAt: null, sequence: 0, gathered: {} };

function observed(partial: Partial<Observed>): Observed {
  return { entered: [], left: [], inState: {}, paused: [], signatureFailures: [], oldestUnresolvedSeconds: null, at: T0, ...partial };
}
const failures = (ids: string[], total = ids.length, left: string[] = []): Look =>
  look(
    'failed',
    observed({
      entered: ids.map((taskId) => ({ taskId, source: 'shop', action: 'crm', state: 'failed', reason: `422 ${taskId} refused` })),
      left: left.map((taskId) => ({ taskId, source: 'shop', action: 'crm', state: 'failed' })),
      inState: { failed: total },
    }),
    0,
  );

describe('an alert condition', () => {
  it('opens with what entered, then holds what comes for the minInterval, then says it with its count', () => {
    const first = decide(closed, failures(['t1', 't2']), MINUTE, T0);
    expect(first.type).toBe('alert.opened');
    expect(first.gathered).toMatchObject({ count: 2, tasks: ['t1', 't2'], by: { 'shop/crm': 2 } });
    const held = decide(first.next, failures(['t3'], 3), MINUTE, after(10));
    expect(held.type).toBeNull();
    const heldMore = decide(held.next, failures(['t4', 't5'], 5), MINUTE, after(30));
    expect(heldMore.type).toBeNull();
    const second = decide(heldMore.next, failures([], 5), MINUTE, after(61));
    expect(second.type).toBe('alert.opened');
    expect(second.gathered).toMatchObject({ count: 3, tasks: ['t3', 't4', 't5'] });
    expect(second.next.sequence).toBe(2);
  });

  it('says nothing while open when nothing new came, and clears once none is left, after the interval', () => {
    const opened = decide(closed, failures(['t1']), MINUTE, T0).next;
    expect(decide(opened, failures([], 1), MINUTE, after(120)).type).toBeNull();
    const early = decide(opened, failures([], 0), MINUTE, after(20));
    expect(early.type).toBeNull();
    const cleared = decide(early.next, failures([], 0), MINUTE, after(61));
    expect(cleared.type).toBe('alert.resolved');
    expect(cleared.next.open).toBe(false);
  });

  it('keeps a thousand task IDs, the latest, and names ten', () => {
    const ids = Array.from({ length: 1025 }, (_, i) => `t${i}`);
    const opened = decide(closed, failures(ids), MINUTE, T0);
    expect(opened.gathered.count).toBe(1025);
    expect(opened.gathered.tasks).toEqual(ids.slice(-1000));
    expect(alertEvent({ type: 'alert.opened', alert: 'ops', condition: 'failed', gathered: opened.gathered, total: 1025, publicUrl: undefined, at: T0 }).tasks)
      .toEqual(ids.slice(-10));
  });

  it('takes tasks that left the state out of what it holds for the next message', () => {
    const opened = decide(closed, failures(['t1']), MINUTE, T0);
    const held = decide(opened.next, failures(['t2', 't3'], 3), MINUTE, after(10));
    const next = decide(held.next, failures([], 2, ['t2']), MINUTE, after(61));
    expect(next.type).toBe('alert.opened');
    expect(next.gathered).toMatchObject({ count: 1, tasks: ['t3'], by: { 'shop/crm': 1 } });
    // Every task it held left: nothing new to say, though the condition is open.
    const emptied = decide(held.next, failures([], 1, ['t2', 't3']), MINUTE, after(61));
    expect(emptied.type).toBeNull();
    expect(emptied.next.gathered).toMatchObject({ count: 0, tasks: [], by: {} });
  });

  it('says why the latest task of each source and action failed', () => {
    const opened = decide(closed, failures(['t1', 't2']), MINUTE, T0);
    const event = alertEvent({ type: 'alert.opened', alert: 'ops', condition: 'failed', gathered: opened.gathered, total: 2, publicUrl: undefined, at: T0 });
    expect(event.detail).toEqual(['shop/crm: 422 t2 refused']);
    expect(slackText(event)).toContain('\nshop/crm: 422 t2 refused\n');
  });

  it('forgets tasks that entered and left before anything was said', () => {
    const quiet = decide({ ...closed, lastSentAt: T0 }, failures(['t1'], 0), MINUTE, after(5));
    expect(quiet.type).toBeNull();
    expect(quiet.next.gathered).toMatchObject({ count: 0 });
  });

  it('says a paused destination once, again when the situation changes, and clears on resume', () => {
    const paused = (origins: string[]) => look('destination_paused', observed({ paused: origins.map((origin) => ({ origin, reason: '401' })) }), 0);
    const opened = decide(closed, paused(['https://a.example']), MINUTE, T0);
    expect(opened.type).toBe('alert.opened');
    expect(opened.gathered.detail).toEqual(['https://a.example: 401']);
    expect(decide(opened.next, paused(['https://a.example']), MINUTE, after(90)).type).toBeNull();
    const more = decide(opened.next, paused(['https://a.example', 'https://b.example']), MINUTE, after(90));
    expect(more.type).toBe('alert.opened');
    expect(decide(more.next, paused([]), MINUTE, after(200)).type).toBe('alert.resolved');
  });

  it('opens signature_failures at 5 deliveries answered 401 for one source, naming the checks', () => {
    const seen = (count: number) =>
      look('signature_failures', observed({ signatureFailures: [{ source: 'shop', check: 'signature', count }, { source: 'shop', check: 'missing_header', count: 1 }] }), 0);
    expect(seen(3).active).toBe(false);
    const opened = decide(closed, seen(4), MINUTE, T0);
    expect(opened.type).toBe('alert.opened');
    expect(opened.gathered.detail).toEqual(['shop: 5 deliveries answered 401 in 5 minutes (4 signature, 1 missing header)']);
  });

  it('opens unresolved_age once the oldest unresolved task is older than unresolvedAge', () => {
    const aged = (seconds: number | null) => look('unresolved_age', observed({ oldestUnresolvedSeconds: seconds }), 3_600_000);
    expect(aged(3599).active).toBe(false);
    expect(aged(null).active).toBe(false);
    expect(decide(closed, aged(7200), MINUTE, T0).gathered.detail).toEqual(['the oldest unresolved task is 2.0 h old']);
  });
});
