/** A person's decision about a destination: resuming one paused after a 401 or 403. */
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { TASKS_CHANNEL } from '../decisions.ts';
import { rowsOf } from '../rows.ts';
import type { Decider } from './operator.ts';

export type ResumeOutcome = { done: true } | { done: false; known: boolean };

/**
 * A person resumes a destination paused after a 401 or 403 — having fixed the credentials — so its tasks
 * are claimed again. Tasks that failed on the refusal stay failed: retrying them is a decision of its own.
 */
export async function resumeDestination(db: Db, input: { origin: string } & Decider): Promise<ResumeOutcome> {
  const [row] = await rowsOf<{ known: boolean; done: boolean }>(
    db,
    sql`
    with current as (
      select origin, paused_at, paused_reason from destinations where origin = ${input.origin} for update
    ),
    resumed as (
      update destinations d set paused_at = null, paused_reason = null, updated_at = now()
      from current c where d.origin = c.origin and c.paused_at is not null
      returning c.origin, c.paused_at, c.paused_reason
    ),
    noted as (
      insert into operator_actions (destination, kind, actor, note, detail)
      select origin, 'resume', ${input.actor}, ${input.note},
        jsonb_build_object('pausedAt', paused_at, 'pausedReason', paused_reason)
      from resumed
      returning id
    )
    select exists (select 1 from current) as known, exists (select 1 from resumed) as done,
      (select count(*) from resumed, pg_notify(${TASKS_CHANNEL}, '')) as notified`,
  );
  return row?.done ? { done: true } : { done: false, known: row?.known ?? false };
}
