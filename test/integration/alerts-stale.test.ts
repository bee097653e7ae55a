import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decideRound } from '../../src/alerts/watcher.ts';
import type { AlertEvent } from '../../src/alerts/messages.ts';
import { parseConfig } from '../../src/config/load.ts';
import { alertRound, ALERTS_SOURCE } from '../../src/store/atomic/alerts.ts';
import { shopConfig } from '../support/deliveries.ts';
import { freshStore, type TestStore } from '../support/engine.ts';
import { rows } from '../support/forwarding.ts';

// What a round may tell: a task that entered a state and left it before the message about it was made is not told,
// whether it left within the round (a lookup reconciles an unknown outcome a second after it) or while the
// condition's minInterval held the news back. The condition stays open meanwhile, kept so by another task.
const { config } = parseConfig(
  JSON.stringify({
    ...shopConfig(),
    alerts: { ops: { url: 'http://127.0.0.1:9/hooks', format: 'json', on: ['outcome_unknown', 'failed'], minIntervalSeconds: 60 } },
  }),
  'test',
);

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await run(sql`truncate tasks, task_refs, task_transitions, alert_states`);
});

const round = () => alertRound(t.store.db, (observed, states) => decideRound(config, observed, states));
const run = (statement: ReturnType<typeof sql>) => t.store.db.execute(statement);
const task = (id: string, state: string) =>
  run(sql`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256) values (${id}, 'shop', 'crm', ${id}, ${id}, ${state}, 'x')`);
const enter = (id: string, state: string, lastError: string | null = null) =>
  run(sql`update tasks set state = ${state}, last_error = ${lastError} where id = ${id}`);
/** The minInterval passed: the next round may speak. */
const intervalPassed = () => run(sql`update alert_states set last_sent_at = now() - interval '2 minutes'`);
async function messages(condition: string): Promise<AlertEvent[]> {
  const made = await rows<{ body: string }>(
    t.store.db,
    sql`select convert_from(body, 'UTF8') as body from tasks where source = ${ALERTS_SOURCE} and event_id = ${condition} order by created_at, id`,
  );
  return made.map((m) => JSON.parse(m.body) as AlertEvent);
}

describe('an alert round', () => {
  it('does not tell of a task that left the state within the round', async () => {
    await task('t_still', 'outcome_unknown');
    await round();
    await task('t_reconciled', 'pending');
    await enter('t_reconciled', 'outcome_unknown');
    // Its lookup found the effect before the round looked.
    await enter('t_reconciled', 'succeeded');
    await intervalPassed();
    await round();
    expect((await messages('outcome_unknown')).map((m) => [m.count, m.tasks])).toEqual([[1, ['t_still']]]);
  });

  it('does not tell of a task that left the state while the minInterval held its news back', async () => {
    await task('t_still', 'outcome_unknown');
    await round();
    await task('t_held', 'pending');
    await task('t_told', 'pending');
    await enter('t_held', 'outcome_unknown');
    await enter('t_told', 'outcome_unknown');
    await round();
    await enter('t_held', 'succeeded');
    await intervalPassed();
    await round();
    const told = await messages('outcome_unknown');
    expect(told.map((m) => [m.count, m.tasks])).toEqual([[1, ['t_still']], [1, ['t_told']]]);
    expect(told[1]).toMatchObject({ source: 'shop', action: 'crm', breakdown: [{ source: 'shop', action: 'crm', count: 1 }] });
  });

  it('says why tasks failed: the latest reason of each source and action', async () => {
    await task('t_a', 'pending');
    await task('t_b', 'pending');
    await enter('t_a', 'failed', '422 {"error":"email is invalid"}');
    await enter('t_b', 'failed', '422 {"error":"phone is invalid"}');
    await round();
    const [failed] = await messages('failed');
    expect(failed).toMatchObject({ count: 2, detail: ['shop/crm: 422 {"error":"phone is invalid"}'] });
  });
});
