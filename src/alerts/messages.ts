/**
 * An alert message in its endpoint's format: `slack` (an incoming webhook's `text`) or `json` (an event a program
 * reads, signed with Standard Webhooks headers when the alert has a signingSecret — the forwarder signs it).
 */
import type { AlertCondition } from '../config/alerts.ts';
import { MAX_TASK_IDS, type Gathered } from './decide.ts';

export interface AlertEvent {
  type: 'alert.opened' | 'alert.resolved' | 'alert.test';
  alert: string;
  condition: AlertCondition | 'test';
  /** What is new since the last message: tasks that entered the state, or the situation's size. */
  count: number;
  /** Tasks in the state now (up to 10,000), or the situation's size. */
  total: number;
  tasks: string[];
  /** The source and action, when every task counted is of one; null when they are several (see `breakdown`). */
  source: string | null;
  action: string | null;
  breakdown: { source: string; action: string; count: number }[];
  /** The situation in lines; for `failed`, why the latest task of each source and action failed. */
  detail: string[];
  /** The dashboard page to look at; null without `publicUrl`. */
  link: string | null;
  at: string;
}

const STATE_WORDS: Partial<Record<AlertCondition, string>> = {
  needs_review: 'need a person to review them',
  outcome_unknown: 'have an unknown outcome',
  failed: 'failed',
  awaiting_approval: 'wait for approval',
};

/** The dashboard page a condition points at. */
function page(condition: AlertCondition | 'test'): string {
  if (condition in STATE_WORDS) return `/ui/attention?state=${condition}`;
  if (condition === 'destination_paused') return '/ui/destinations';
  if (condition === 'unresolved_age') return '/ui/attention';
  return '/ui';
}

export function alertEvent(
  input: { type: AlertEvent['type']; alert: string; condition: AlertEvent['condition']; gathered: Gathered; total: number; publicUrl: string | undefined; at: Date },
): AlertEvent {
  const { gathered } = input;
  const breakdown = Object.entries(gathered.by).map(([key, count]) => {
    const slash = key.indexOf('/');
    return { source: key.slice(0, slash), action: key.slice(slash + 1), count };
  });
  const only = breakdown.length === 1 ? breakdown[0]! : null;
  return {
    type: input.type,
    alert: input.alert,
    condition: input.condition,
    count: gathered.count,
    total: input.total,
    tasks: gathered.tasks.slice(-MAX_TASK_IDS),
    source: only?.source ?? null,
    action: only?.action ?? null,
    breakdown,
    detail: [...gathered.detail, ...Object.entries(gathered.why ?? {}).map(([key, reason]) => `${key}: ${reason}`)],
    link: input.publicUrl === undefined ? null : new URL(page(input.condition), input.publicUrl).toString(),
    at: input.at.toISOString(),
  };
}

/** The event as one line a person reads in Slack. */
export function slackText(event: AlertEvent): string {
  const words = event.condition === 'test' ? null : STATE_WORDS[event.condition];
  const head =
    event.type === 'alert.test'
      ? `oncehook test alert from "${event.alert}": this endpoint receives oncehook's alerts`
      : event.type === 'alert.resolved'
        ? `resolved: ${event.condition}`
        : words
          ? `${event.count} task${event.count === 1 ? '' : 's'} ${words}${event.total > event.count ? ` (${event.total} in all)` : ''}`
          : `${event.condition}`;
  const where = event.breakdown.map((b) => `${b.source}/${b.action} ×${b.count}`).join(', ');
  const parts = [
    `${event.type === 'alert.resolved' ? ':white_check_mark:' : event.type === 'alert.test' ? ':wave:' : ':rotating_light:'} oncehook: ${head}`,
    where,
    ...event.detail,
    event.tasks.length > 0 ? `tasks: ${event.tasks.join(', ')}` : '',
    event.link ? `<${event.link}|open the dashboard>` : '',
  ];
  return parts.filter(Boolean).join('\n');
}

export function messageBody(format: 'slack' | 'json', event: AlertEvent): string {
  return JSON.stringify(format === 'slack' ? { text: slackText(event) } : event);
}
