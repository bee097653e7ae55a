import { heldWords, ledgerName, originUses, strandedWords, tasksMadeWords, versionsWords } from '../operate/explain.ts';
import type { Alerts, Bulk, Deliveries, Delivery, Destinations, Rejections, StatsAnswer, Task, Tasks, Tried, Instances } from './answers.ts';
import { age, cut, fields, seconds, table } from './table.ts';

/** How each API answer reads in a terminal. `--json` prints the answer itself instead. */

export function deliveriesView(page: Deliveries): string {
  const rows = page.items.map((d) => [d.id, age(d.receivedAt), d.source, d.decision, tasksMadeWords(d) ?? '', d.eventId, d.deliveryId]);
  const listed = table(['ID', 'AGE', 'SOURCE', 'DECISION', 'TASKS', 'EVENT', 'DELIVERY ID'], rows, 40);
  if (!page.partial) return withNext(listed, page);
  // A search that stopped at its bound says so, even with nothing found yet: the cursor reads on from there.
  const found = page.items.length === 0 ? 'nothing found yet' : listed;
  return `${found}\n\nthe search stopped at its bound of receipts read; more may match: --cursor ${page.nextCursor}`;
}

/** Said of a task whose stored body retention purged: it can no longer be sent. */
const PURGED = 'body purged by retention';
/** Why a bulk decision passed a task over because of a replay, in the terms of that decision. */
const BY_REPLAY: Record<string, string> = {
  retry: 'a replay made the effect or is on its way to; retry one by one to make it again',
  replay: 'a replay in its replay tree has not finished; another now would be one more effect',
};

type Listed = Tasks['items'][number];

export function tasksView(page: Tasks): string {
  const reason = (t: Listed) =>
    t.heldBy ? heldWords({ origin: t.heldBy, use: t.heldFor ?? 'send', reason: null }) : t.strandedBy ? strandedWords(t.strandedBy).short : (t.lastError ?? t.resultReference);
  // First, so that a long error cut to the column's width never hides it.
  const why = (t: Listed) => [t.bodyPurged ? PURGED : null, reason(t)].filter(Boolean).join('; ') || null;
  const rows = page.items.map((t) => [t.id, t.state, `${t.source}/${t.action}`, t.attempts, t.owner, age(t.createdAt), why(t)]);
  // The pauses' reasons go under the table, once per origin: in a row they would be cut to the column's width.
  const pauseReasons = new Map(page.items.flatMap((t) => (t.heldBy && t.heldReason ? [[t.heldBy, t.heldReason] as const] : [])));
  const pauses = [...pauseReasons].map(([origin, why]) => `${origin} is paused: ${why}`);
  const listed = table(['ID', 'STATE', 'ACTION', 'SENDS', 'OWNER', 'AGE', 'WHY / REFERENCE'], rows, 50);
  return withNext([listed, ...(pauses.length > 0 ? ['', ...pauses] : [])].join('\n'), page);
}

function withNext(text: string, page: { items: unknown[]; hasMore: boolean; nextCursor: string | null }): string {
  if (page.items.length === 0) return '(none)';
  return page.hasMore ? `${text}\n\nmore: --cursor ${page.nextCursor}` : text;
}

const taskCount = (n: number) => `${n} task${n === 1 ? '' : 's'}`;

export function bulkView(answer: Bulk): string {
  const reasons = [
    answer.skippedBodyPurged > 0 ? `${taskCount(answer.skippedBodyPurged)} skipped: ${PURGED}` : null,
    answer.skippedByReplay > 0 ? `${taskCount(answer.skippedByReplay)} skipped: ${BY_REPLAY[answer.kind]}` : null,
    answer.transformAgain ? `${taskCount(answer.transformAgain)} failed at their transform, computed again first` : null,
    answer.skippedTransformFailed > 0
      ? answer.kind === 'replay'
        ? `${taskCount(answer.skippedTransformFailed)} skipped: failed at their transform and never sent (retry them)`
        : `${taskCount(answer.skippedTransformFailed)} skipped: their transform failed again (${(!answer.dryRun && answer.transformErrors?.[0]?.error) || 'see the task'})`
      : null,
  ].filter((reason) => reason !== null);
  const skipped = reasons.length > 0 ? ` (${reasons.join('; ')})` : '';
  return answer.dryRun
    ? `${answer.kind} would change ${taskCount(answer.count)}${skipped}; run again without --dry-run to do it`
    : `${answer.kind}: ${taskCount(answer.count)} changed${skipped}${answer.count > 0 ? `\n${answer.tasks.join('\n')}` : ''}`;
}

export function deliveryView(view: Delivery): string {
  return [
    view.explanation,
    '',
    fields([
      ['receipt', view.id],
      ['source', view.source],
      ['delivery ID', view.deliveryId],
      ['event ID', view.eventId],
      ['topic', view.topic],
      ['received', `${view.receivedAt} (${age(view.receivedAt)} ago)`],
      ['matched', view.matched?.id],
      ['body', `${view.bodyBytes} bytes, sha256 ${view.bodySha256}${view.bodyPurged ? `; ${PURGED}` : ''}`],
    ]),
    ...(view.body === null ? [] : ['', `received${view.bodyEncoding === 'base64' ? ' (not text: base64)' : ''}:`, bodyText({ text: view.body, truncated: view.bodyTruncated })]),
    ...(view.tasks.length > 0 ? ['', table(['TASK', 'ACTION', 'STATE', 'REFERENCE / ERROR'], view.tasks.map((t) => [t.id, t.action, t.state, t.resultReference ?? t.lastError]))] : []),
    ...(view.skipped?.length > 0 ? ['', table(['NO TASK FOR', 'WHY', 'WHAT DID NOT MATCH'], view.skipped.map((s) => [s.action, s.reason, s.detail]))] : []),
    ...(view.repeats.length > 0 ? ['', `repeated by: ${view.repeats.map((r) => `${r.id} (${r.decision})`).join(', ')}`] : []),
  ].join('\n');
}

export function taskExplanation(task: Pick<Task, 'summary' | 'nextDecision' | 'allowedActions'>): string {
  return [task.summary, ...(task.nextDecision ? [`next: ${task.nextDecision}`] : []), ...(task.allowedActions.length > 0 ? [`allowed: ${task.allowedActions.join(', ')}`] : [])].join('\n');
}

export function taskView(task: Task): string {
  const attempts = task.ledger.map((a) => [
    ledgerName(a),
    age(a.startedAt),
    a.responseStatus,
    a.class ?? 'in flight',
    a.durationMs === null ? null : `${a.durationMs}ms`,
    a.reference ?? a.error,
  ]);
  const actions = task.operatorActions.map((o) => [o.kind, age(o.createdAt), o.actor, cut(o.note, 60)]);
  return [
    taskExplanation(task),
    '',
    fields([
      ['task', task.id],
      ['state', task.state],
      ['action', `${task.source}/${task.action}`],
      ['event', task.eventId],
      ['delivery', task.deliveryId],
      ['owner', task.owner],
      ['reference', task.resultReference],
      ['last error', task.lastError],
      ['body', task.bodyPurged ? `${PURGED}: it cannot be sent again` : `stored, ${task.bodyBytes} bytes, sha256 ${task.bodySha256}`],
      ['transform error', task.transformError],
      ['request', task.request ? `${task.request.method} ${task.request.url}` : null],
      ...(task.request?.lookupUrl ? [['lookup', `GET ${task.request.lookupUrl}`] as [string, string]] : []),
      ['headers', task.request && task.request.headers.length > 0 ? `${task.request.headers.join(', ')} (values not shown)` : null],
      ['order', task.order ? `key ${task.order.key} (${task.order.mode}), position ${task.order.position ?? 'arrival'}` : null],
      ['held behind', task.order?.heldBy ? `${task.order.heldBy.id} (${task.order.heldBy.state})` : null],
      ['superseded by', task.order?.supersededBy ?? null],
      ['replay of', task.replayOf],
      ['replays', task.replays.map((r) => r.id).join(', ') || null],
      ['created', `${task.createdAt} (${age(task.createdAt)} ago)`],
    ]),
    ...(task.body ? ['', `${task.transformError ? 'the delivery\'s bytes, kept for the transform' : 'sends'}:`, bodyText(task.body)] : []),
    '',
    attempts.length > 0 ? table(['ATTEMPT', 'AGO', 'HTTP', 'CLASS', 'TOOK', 'REFERENCE / ERROR'], attempts) : 'no attempts yet',
    ...(actions.length > 0 ? ['', table(['DECISION', 'AGO', 'BY', 'NOTE'], actions)] : []),
  ].join('\n');
}

/** The start of the stored bytes a terminal can take; --json has all the view holds. */
const BODY_LINES = 2000;

function bodyText(body: { text: string; truncated: boolean }): string {
  const cut = body.truncated || body.text.length > BODY_LINES;
  return cut ? `${body.text.slice(0, BODY_LINES)}… (cut; --json shows more)` : body.text;
}

export function statsView(stats: StatsAnswer): string {
  return [
    fields([
      ['events', stats.events],
      ['deliveries', stats.deliveries],
      ...Object.entries(stats.decisions).map(([decision, n]): [string, number] => [`  ${decision}`, n]),
      ['confirmed effects', stats.confirmedEffects],
      ['unresolved tasks', `${stats.unresolved.count} (oldest ${seconds(stats.unresolved.oldestAgeSeconds)})`],
      ['needing a person', `${stats.needsAttention.count} (oldest ${seconds(stats.needsAttention.oldestAgeSeconds)})`],
      ['paused destinations', stats.pausedDestinations],
    ]),
    '',
    table(['STATE', 'TASKS', 'OLDEST'], stats.tasks.map((s) => [s.state, s.count, seconds(s.oldestAgeSeconds)])),
    '',
    table(['ATTEMPT CLASS', 'COUNT'], Object.entries(stats.attempts)),
    // oncehook's own alert messages, apart from the sources' tasks counted above; none where no alert is set up.
    ...(Object.keys(stats.alertMessages).length > 0 ? ['', table(['ALERT MESSAGES', 'COUNT'], Object.entries(stats.alertMessages))] : []),
  ].join('\n');
}

/** The tasks waiting to be sent to an origin, and the unknown outcomes waiting to ask it, when there are any. */
function waitingFor(d: { waiting?: number; waitingLookups?: number }): string | number | undefined {
  return d.waitingLookups ? `${d.waiting ?? 0} + ${d.waitingLookups} lookups` : d.waiting;
}

export function destinationsView(answer: Destinations): string {
  const limits = (d: Destinations['items'][number]) =>
    d.limit === null
      ? null
      : [d.limit.perSecond === null ? null : `${d.limit.perSecond}/s burst ${d.limit.burst}`, d.limit.maxInFlight === null ? null : `${d.limit.maxInFlight} at once`]
          .filter(Boolean)
          .join(', ');
  return table(
    ['ORIGIN', 'STATUS', 'SINCE', 'ACTIONS', 'LIMITS', 'IN FLIGHT', 'WAITING', 'REASON'],
    answer.items.map((d) => [d.origin, d.status, d.pausedAt ? age(d.pausedAt) : null, originUses(d), limits(d), d.inFlight, waitingFor(d), d.pausedReason]),
  );
}

export function rejectionsView(answer: Rejections): string {
  if (answer.items.length === 0) return `no request was refused since ${answer.since}`;
  const counts = answer.items.map((r) => [r.source, r.reason, r.total, r.minutes.at(-1) ? age(r.minutes.at(-1)!.minute) : null]);
  const samples = answer.items.flatMap((r) => r.samples.map((s) => [age(s.at), r.source, s.reason, s.remoteAddress, cut(s.headerNames.join(' '), 80)]));
  return [
    `refused since ${answer.since}`,
    '',
    table(['SOURCE', 'REASON', 'REFUSED', 'LAST MINUTE'], counts),
    '',
    table(['AGO', 'SOURCE', 'REASON', 'FROM', 'HEADER NAMES (values are not kept)'], samples),
  ].join('\n');
}

export function alertsView(answer: Alerts): string {
  const conditions = answer.alerts.flatMap((a) =>
    a.conditions.map((c) => [a.name, `${a.format} → ${a.destination}`, c.condition, c.open ? 'open' : 'clear', c.lastSentAt ? age(c.lastSentAt) : null, c.messages]),
  );
  const messages = answer.items.map((m) => [m.id, age(m.createdAt), m.alert, m.type, m.condition, m.state, m.attempts, m.lastError]);
  return [
    conditions.length > 0 ? table(['ALERT', 'SENT TO', 'CONDITION', 'NOW', 'LAST SENT', 'MESSAGES'], conditions) : 'no alert is configured',
    '',
    withNext(table(['MESSAGE', 'AGO', 'ALERT', 'TYPE', 'CONDITION', 'STATE', 'SENDS', 'ERROR'], messages), answer),
  ].join('\n');
}

/** Per action of either config: the counts, then each kind's examples, one a line. */
export function triedView(answer: Tried): string {
  const lines = [`tried ${answer.tried} deliver${answer.tried === 1 ? 'y' : 'ies'}${answer.notRetained > 0 ? ` (${answer.notRetained} more no longer kept: not tried)` : ''}; nothing was sent or written`];
  if (answer.actions.length === 0) lines.push('no task made, or to be made');
  for (const action of answer.actions) {
    const kinds = [
      ['made', action.made],
      ['not made', action.notMade],
      ['shaped differently', action.shapedDifferently],
    ] as const;
    const counts = [`${action.same} the same`, ...kinds.filter(([, kind]) => kind.count > 0).map(([name, kind]) => `${kind.count} ${name}`)];
    lines.push(`${action.source}/${action.action}: ${counts.join(' · ')}`);
    for (const [name, kind] of kinds) {
      for (const e of kind.examples) lines.push(`  ${name}: ${e.receipt} (event ${e.eventId}) ${e.task}: ${e.detail}`);
    }
  }
  return lines.join('\n');
}

/** The live instances, and a warning under them while they run different configs. */
export function instancesView(answer: Instances): string {
  const rows = answer.instances.map((i) => [i.host, String(i.pid), i.role, i.configVersion, age(i.startedAt), age(i.seenAt)]);
  const shown = table(['HOST', 'PID', 'ROLE', 'CONFIG', 'UP', 'SEEN'], rows);
  return answer.differ ? `${shown}\n${versionsWords(answer.configVersions)}` : shown;
}
