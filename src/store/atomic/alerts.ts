/**
 * An alert round: what each alert's conditions observe now, what is sent about it, and where each stands after —
 * one transaction. The messages are tasks (source `_alerts`) inserted with the round's new standing, so a message is
 * made exactly when its alert's state says it was: a crash loses neither, and a second instance, which finds the
 * round's lock taken, makes none. The forwarder then sends them as any task: retried, in the run ledger, keyed.
 */
import { sql } from 'drizzle-orm';
import { ALERT_CONDITIONS } from '../../config/alerts.ts';
import type { Db } from '../connect.ts';
import { TASKS_CHANNEL } from '../decisions.ts';
import { batchJson, rowsOf } from '../rows.ts';

/** The source of the alerts' own messages: no configured source can be named so (names start with a letter or digit). */
export const ALERTS_SOURCE = '_alerts';
/** The event IDs of the alerts' messages: each its condition, or `test`. How the task tally finds them (task_refs' event index). */
export const MESSAGE_EVENT_IDS: readonly string[] = [...ALERT_CONDITIONS, 'test'];

/** One round's look at the queue and the destinations. */
export interface Observed {
  /**
   * Tasks that entered a state waiting for a person since the last round, each entry once, and are in it still: one
   * that left it already (an unknown outcome a lookup reconciled a second later) waits for nobody. For `failed`, why.
   */
  entered: { taskId: string; source: string; action: string; state: string; reason: string | null }[];
  /** Tasks a condition gathered for its next message (`gathered.tasks`) that have left its state since. */
  left: { taskId: string; source: string; action: string; state: string }[];
  /** Tasks in each of those states now, counted up to a bound (`stateTotalsCap`). */
  inState: Record<string, number>;
  paused: { origin: string; reason: string | null }[];
  /** Deliveries answered 401 in the last five minutes, by source and failed check. */
  signatureFailures: { source: string; check: string; count: number }[];
  /** The oldest unresolved task's age, in seconds; null when none is unresolved. */
  oldestUnresolvedSeconds: number | null;
  at: Date;
}

export const STATE_TOTALS_CAP = 10_000;
/** The states whose totals an alert round counts. Names, not input: each is written into the statement. */
const COUNTED_STATES = ['needs_review', 'outcome_unknown', 'failed', 'awaiting_approval'] as const;

/**
 * The round's totals of tasks in each of those states, each capped. Each state is named in the statement, not joined
 * from a list: for a state it cannot see, the planner expected every task to match and scanned the table for the
 * first ten thousand, reading all of it where a state held none (6.2 s and 2 million pages a round at ten million
 * tasks). Named, its statistics send each count to tasks_state_idx.
 */
export const STATE_TOTALS = sql`jsonb_build_object(${sql.join(
  COUNTED_STATES.map(
    (state) => sql`${state}::text, (select count(*) from (select 1 from tasks t
      where t.state = ${sql.raw(`'${state}'`)} and t.source <> ${ALERTS_SOURCE} limit ${STATE_TOTALS_CAP}) capped)`,
  ),
  sql`, `,
)})`;
/** Entries consumed a round at most: a backlog after a long outage is worked through round by round. */
const ENTRIES_PER_ROUND = 5000;
/** A failure's reason, as a message quotes it: the start of its last error. */
const REASON_CHARS = 200;

export interface AlertStateRow {
  alert: string;
  condition: string;
  open: boolean;
  lastSentAt: Date | null;
  sequence: number;
  /** What the condition holds for its next message; its `tasks`, an array of task IDs, are looked at each round. */
  gathered: Record<string, unknown>;
}

/** A message to send: the task that carries it. */
export interface AlertMessage {
  id: string;
  alert: string;
  condition: string;
  type: string;
  body: string;
  /** The message before it in its condition's sequence: it is sent only after that one (null: nothing before it). */
  after?: string | null;
}

/** The advisory lock a round holds: one instance's round at a time. */
export const ROUND_LOCK = 4_207_311_002;

/**
 * Runs one round under a lock only one instance holds at a time; null when another holds it. `decide` is given what
 * is observed and each alert's standing, and answers the messages to make and the standings after.
 */
export async function alertRound(
  db: Db,
  decide: (observed: Observed, states: AlertStateRow[]) => { messages: AlertMessage[]; states: AlertStateRow[] },
): Promise<number | null> {
  return db.transaction(async (tx) => {
    const [lock] = await rowsOf<{ held: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${ROUND_LOCK}) as held`);
    if (!lock?.held) return null;
    const states = (await rowsOf<AlertStateRow>(
      tx,
      sql`select alert, condition, open, last_sent_at as "lastSentAt", sequence, gathered from alert_states`,
    )).map((row) => ({ ...row, lastSentAt: row.lastSentAt === null ? null : new Date(row.lastSentAt) }));
    const observed = await observe(tx);
    const decided = decide(observed, states);
    if (decided.messages.length > 0) await insertMessages(tx, decided.messages);
    if (decided.states.length > 0) {
      const rows = decided.states.map((s) => ({ ...s, lastSentAt: s.lastSentAt?.toISOString() ?? null }));
      await rowsOf(
        tx,
        sql`insert into alert_states (alert, condition, open, last_sent_at, sequence, gathered)
            select alert, condition, open, "lastSentAt", sequence, gathered
            from json_to_recordset(${batchJson(rows)}::json) as s(alert text, condition text, open boolean,
              "lastSentAt" timestamptz, sequence int, gathered jsonb)
            on conflict (alert, condition) do update set open = excluded.open, last_sent_at = excluded.last_sent_at,
              sequence = excluded.sequence, gathered = excluded.gathered`,
      );
    }
    await releaseMessages(tx);
    // Counts older than the window the condition looks at are of no use to any round.
    await rowsOf(tx, sql`delete from signature_failures where at < now() - interval '10 minutes'`);
    return decided.messages.length;
  });
}

async function observe(db: Db): Promise<Observed> {
  // One statement, so the entries taken, the tasks they name and the states counted are of one moment. In two, a task
  // that failed between them was counted but its entry left for the next round: the condition opened with nothing to
  // tell, and opened again a round later with the task.
  //
  // An entry says a task entered a state, not that it is there: a lookup may have reconciled it since, and a message
  // made later still would list a task nobody needs to look at. So each entry is read against its task, and what a
  // condition gathered while its minInterval held the news back is read again, every round, until it is told.
  const [figures] = await rowsOf<{
    entered: Observed['entered'];
    left: Observed['left'];
    inState: Record<string, number>;
    oldest: number | null;
    at: string;
  }>(
    db,
    sql`with entered as (
          delete from task_transitions
          where id in (select id from task_transitions order by id limit ${ENTRIES_PER_ROUND})
          returning id, task_id, source, action, state
        )
        select
          (select coalesce(jsonb_agg(jsonb_build_object('taskId', e.task_id, 'source', e.source, 'action', e.action, 'state', e.state,
              'reason', case when e.state = 'failed' then left(coalesce('transform: ' || t.transform_error, t.last_error), ${REASON_CHARS}) end)
              order by e.id), '[]'::jsonb)
           from entered e join tasks t on t.id = e.task_id and t.state = e.state) as entered,
          (select coalesce(jsonb_agg(distinct jsonb_build_object('taskId', t.id, 'source', t.source, 'action', t.action, 'state', g.condition)),
              '[]'::jsonb)
           from alert_states g
             cross join lateral jsonb_array_elements_text(case when jsonb_typeof(g.gathered->'tasks') = 'array' then g.gathered->'tasks' else '[]' end) as kept(task_id)
             join tasks t on t.id = kept.task_id
           where t.state <> g.condition) as "left",
          ${STATE_TOTALS} as "inState",
          (select extract(epoch from now() - min(oldest))::float8 from (
            select (select min(t.created_at) from tasks t where t.state = s.state and t.source <> ${ALERTS_SOURCE}) as oldest
            from unnest(array['pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval', 'failed']) as s(state)
          ) o) as oldest,
          now() as at`,
  );
  const paused = await rowsOf<Observed['paused'][number]>(
    db,
    sql`select origin, paused_reason as reason from destinations where paused_at is not null order by origin`,
  );
  const signatureFailures = await rowsOf<Observed['signatureFailures'][number]>(
    db,
    sql`select source, "check", sum(count)::int as count from signature_failures
        where at > now() - interval '5 minutes' group by source, "check" order by source, "check"`,
  );
  return {
    entered: figures!.entered,
    left: figures!.left,
    inState: figures!.inState,
    paused,
    signatureFailures,
    oldestUnresolvedSeconds: figures!.oldest,
    at: new Date(figures!.at),
  };
}

/**
 * The messages as tasks of the alert's route, each under its own derived ID: inserted once, whatever happens.
 *
 * A condition's messages go out in their order: each waits for the one before it (the claim's `after_task_id`, as
 * an action's step waits for its sibling) while that one is still on its way. Retried each on its own backoff, a
 * "resolved" made while the endpoint was down was sent before the "opened" it follows as often as not (the opened
 * had waited longer, so its next try was further off), and Slack, which shows what arrives in the order it arrives,
 * ended on "opened" for a condition that had cleared. Waiting, a message also spends no attempts on an endpoint
 * that its predecessor finds down.
 */
export async function insertMessages(db: Db, messages: readonly AlertMessage[]): Promise<void> {
  const rows = messages.map((m) => ({ ...m, after: m.after ?? null, body: Buffer.from(m.body).toString('base64') }));
  await rowsOf(
    db,
    sql`with m as (
          select * from json_to_recordset(${batchJson(rows)}::json) as m(id text, alert text, condition text, type text, body text, after text)
        ),
        made as (
          insert into tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256, after_task_id)
          select m.id, ${ALERTS_SOURCE}, m.alert, m.condition, m.type, m.id, 'pending', decode(m.body, 'base64'),
            'application/json', encode(sha256(decode(m.body, 'base64')), 'hex'),
            -- Only behind a message still on its way: one sent, given up or purged holds nothing back.
            (select p.id from tasks p where p.id = m.after and p.state in ${ON_ITS_WAY})
          from m order by m.id
          on conflict do nothing
          returning id
        )
        select count(*) from made, pg_notify(${TASKS_CHANNEL}, '')`,
  );
}

/** The states of a message not yet sent nor given up. */
const ON_ITS_WAY = sql`('pending', 'in_progress', 'outcome_unknown')`;

/**
 * Lets go the messages whose predecessor will never be sent: it failed (its attempts spent, or the endpoint refused
 * it), went to a person's review, was cancelled. The claim sends a waiting message only once the one before it
 * succeeded, as an action's step; a condition's later messages must not wait for a person as a step does.
 */
async function releaseMessages(db: Db): Promise<void> {
  const released = await rowsOf<{ id: string }>(
    db,
    sql`update tasks t set after_task_id = null, updated_at = now()
        where t.state = 'pending' and t.after_task_id is not null and t.source = ${ALERTS_SOURCE}
          and not exists (select 1 from tasks p where p.id = t.after_task_id and p.state in ${ON_ITS_WAY})
        returning t.id`,
  );
  if (released.length > 0) await rowsOf(db, sql`select pg_notify(${TASKS_CHANNEL}, '')`);
}
