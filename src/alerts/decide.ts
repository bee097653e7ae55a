/**
 * When an alert speaks: a pure function of what a round observed and where the alert's condition stood. A condition
 * opens (a message), may say more while open (at most once per minIntervalSeconds, and only when there is more to
 * say), and clears (a message) — so a thousand failures in a minute are a message or two with their count.
 */
import type { AlertCondition } from '../config/alerts.ts';
import type { AlertStateRow, Observed } from '../store/atomic/alerts.ts';

/** What a condition gathered since its last message. */
export interface Gathered {
  /** Tasks that entered the state (or, for the other conditions, what the situation counts). */
  count: number;
  /** Up to `KEPT_TASK_IDS` of those tasks, the latest last: each round drops those that left the state meanwhile. */
  tasks: string[];
  /** How many of them per `source/action`. */
  by: Record<string, number>;
  /** `failed`: why the latest task of each `source/action` failed. */
  why?: Record<string, string>;
  /** What the situation is, in a line each (an origin and why it is paused, a source and its failed checks). */
  detail: string[];
  /** What the last message said of a situation, so that a change is news and a repeat is not. */
  said?: string;
}

/** One condition's look this round: is it open, and what is new. */
export interface Look {
  active: boolean;
  /** Tasks in the state now, or the situation's size. */
  total: number;
  news: Omit<Gathered, 'said'> | null;
  /** The situation in a key: a change from what was said is news. Task conditions have none: entries are news. */
  situation?: string;
  /** Tasks gathered earlier that have left the state: not told, since nobody needs to look at them now. */
  left?: { taskId: string; key: string }[];
}

/** Task IDs a message names. */
export const MAX_TASK_IDS = 10;
/**
 * Task IDs a condition keeps between messages, so that those that leave the state before the next one can be taken out
 * of its count. Past it, the earliest of a burst are counted as they entered: about 40 kB of gathered at most.
 */
export const KEPT_TASK_IDS = 1000;
/** A source's deliveries answered 401 within five minutes that make signature_failures open. */
export const SIGNATURE_FAILURES_OPEN_AT = 5;

const empty = (): Gathered => ({ count: 0, tasks: [], by: {}, detail: [] });

/** What a condition observes in a round. */
export function look(condition: AlertCondition, observed: Observed, unresolvedAgeMs: number): Look {
  switch (condition) {
    case 'destination_paused': {
      const detail = observed.paused.map((p) => `${p.origin}: ${p.reason ?? 'refused'}`);
      return situation(detail.length > 0, observed.paused.length, detail);
    }
    case 'signature_failures': {
      const bySource = new Map<string, { count: number; checks: string[] }>();
      for (const f of observed.signatureFailures) {
        const s = bySource.get(f.source) ?? { count: 0, checks: [] };
        s.count += f.count;
        s.checks.push(`${f.count} ${f.check.replace('_', ' ')}`);
        bySource.set(f.source, s);
      }
      const failing = [...bySource].filter(([, s]) => s.count >= SIGNATURE_FAILURES_OPEN_AT);
      const detail = failing.map(([source, s]) => `${source}: ${s.count} deliveries answered 401 in 5 minutes (${s.checks.join(', ')})`);
      return situation(failing.length > 0, failing.reduce((n, [, s]) => n + s.count, 0), detail, failing.map(([source]) => source).join(' '));
    }
    case 'unresolved_age': {
      const age = observed.oldestUnresolvedSeconds;
      const old = age !== null && age * 1000 >= unresolvedAgeMs;
      return situation(old, old ? Math.floor(age) : 0, old ? [`the oldest unresolved task is ${minutes(age)} old`] : [], old ? 'old' : '');
    }
    default: {
      const entered = observed.entered.filter((e) => e.state === condition);
      const tasks = [...new Set(entered.map((e) => e.taskId))];
      const by: Record<string, number> = {};
      const why: Record<string, string> = {};
      for (const e of entered) {
        const key = `${e.source}/${e.action}`;
        by[key] = (by[key] ?? 0) + 1;
        if (e.reason !== null) why[key] = e.reason;
      }
      const total = observed.inState[condition] ?? 0;
      const left = observed.left.filter((l) => l.state === condition).map((l) => ({ taskId: l.taskId, key: `${l.source}/${l.action}` }));
      const news = tasks.length === 0 ? null : { count: tasks.length, tasks: tasks.slice(-KEPT_TASK_IDS), by, detail: [], ...(Object.keys(why).length > 0 ? { why } : {}) };
      return { active: total > 0, total, news, left };
    }
  }
}

function situation(active: boolean, total: number, detail: string[], key = detail.join('\n')): Look {
  return { active, total, news: active ? { count: total, tasks: [], by: {}, detail } : null, situation: active ? key : '' };
}

const minutes = (seconds: number) => (seconds < 5400 ? `${Math.floor(seconds / 60)} min` : `${(seconds / 3600).toFixed(1)} h`);

export interface Decision {
  /** `alert.opened` (again, while open, with what is new) or `alert.resolved`; null: nothing to say now. */
  type: 'alert.opened' | 'alert.resolved' | null;
  /** What the message tells (for a type), or what is kept for the next. */
  gathered: Gathered;
  next: Pick<AlertStateRow, 'open' | 'lastSentAt' | 'sequence' | 'gathered'>;
}

/** Where the condition goes from `state` with this round's `look`. */
export function decide(state: Pick<AlertStateRow, 'open' | 'lastSentAt' | 'sequence' | 'gathered'>, seen: Look, minIntervalMs: number, now: Date): Decision {
  const before = forget({ ...empty(), ...(state.gathered as Partial<Gathered>) }, seen.left ?? []);
  // A situation already said is not news again; entries are, each once.
  const news = seen.news && (seen.situation === undefined || seen.situation !== before.said) ? seen.news : null;
  const gathered = news ? merge(seen.situation === undefined ? before : { ...empty(), said: before.said }, news) : before;
  const due = state.lastSentAt === null || now.getTime() - state.lastSentAt.getTime() >= minIntervalMs;
  const sent = (type: 'alert.opened' | 'alert.resolved', open: boolean): Decision => ({
    type,
    gathered,
    next: { open, lastSentAt: now, sequence: state.sequence + 1, gathered: { ...empty(), said: seen.situation } as Record<string, unknown> },
  });
  if (seen.active && due && (!state.open || gathered.count > 0)) return sent('alert.opened', true);
  if (!seen.active && state.open && due) return sent('alert.resolved', false);
  // Tasks that entered and left before anything was said need no one: not kept for a later message.
  const kept = !seen.active && !state.open ? { ...empty(), said: before.said } : gathered;
  return { type: null, gathered: kept, next: { ...state, gathered: kept as unknown as Record<string, unknown> } };
}

function merge(into: Gathered, news: Omit<Gathered, 'said'>): Gathered {
  const by = { ...into.by };
  for (const [key, n] of Object.entries(news.by)) by[key] = (by[key] ?? 0) + n;
  const fresh = new Set(news.tasks);
  const tasks = [...into.tasks.filter((id) => !fresh.has(id)), ...news.tasks].slice(-KEPT_TASK_IDS);
  const why = into.why || news.why ? { ...into.why, ...news.why } : undefined;
  return { ...into, count: into.count + news.count, tasks, by, detail: news.detail.length > 0 ? news.detail : into.detail, ...(why ? { why } : {}) };
}

/** Takes the tasks that left the state out of what was gathered, as if they had never entered it. */
function forget(gathered: Gathered, left: readonly { taskId: string; key: string }[]): Gathered {
  const kept = new Set(gathered.tasks);
  const gone = left.filter((l) => kept.has(l.taskId));
  if (gone.length === 0) return gathered;
  const by = { ...gathered.by };
  const why = gathered.why ? { ...gathered.why } : undefined;
  for (const { key } of gone) {
    by[key] = (by[key] ?? 1) - 1;
    if (by[key]! > 0) continue;
    delete by[key];
    if (why) delete why[key];
  }
  const ids = new Set(gone.map((l) => l.taskId));
  return { ...gathered, count: Math.max(0, gathered.count - gone.length), tasks: gathered.tasks.filter((id) => !ids.has(id)), by, ...(why ? { why } : {}) };
}
