import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from './store/connect.ts';
import { TASK_STATES } from './store/decisions.ts';
import { isUnresolved, queueFigures, summarize, type QueueFigures } from './store/queries/stats.ts';
import { taskTally, type StateCount, type TaskTally } from './store/queries/task-tally.ts';

/** The figures an operator alerts on. One registry per app, so tests and several apps in one process never clash. */
export function createMetrics() {
  const registry = new Registry();
  // Under their standard names (`process_cpu_seconds_total`, `nodejs_eventloop_lag_seconds`, …), as the usual
  // Node.js dashboards and alerts expect them; the scrape's job label tells services apart.
  collectDefaultMetrics({ register: registry });
  const counter = <Label extends string>(name: string, help: string, labelNames: readonly Label[] = []) =>
    new Counter<Label>({ name, help, labelNames, registers: [registry] });
  const histogram = <Label extends string>(name: string, help: string, labelNames: readonly Label[], buckets: number[]) =>
    new Histogram<Label>({ name, help, labelNames, buckets, registers: [registry] });
  return {
    registry,
    deliveries: counter('oncehook_deliveries_total', 'Verified deliveries recorded, by source and decision', ['source', 'decision']),
    rejections: counter(
      'oncehook_rejections_total',
      'Requests answered with an error, and unsigned pings answered 200 (unsigned_ping), none recorded, by source and reason; a store_timeout may still commit afterwards (the sender\'s retry is then a duplicate)',
      ['source', 'reason'],
    ),
    ackSeconds: histogram('oncehook_ack_seconds', 'Time from a request arriving to its answer, by source and status', ['source', 'status'], [
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]),
    forwardAttempts: counter(
      'oncehook_forward_attempts_total',
      'Sends and lookups made to downstream actions, by source, action and outcome class',
      ['source', 'action', 'class'],
    ),
    forwardSeconds: histogram(
      'oncehook_forward_seconds',
      'Duration of requests to downstream actions, by source, action and kind (send or lookup)',
      ['source', 'action', 'kind'],
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    taskTransitions: counter(
      'oncehook_task_transitions_total',
      'Task state changes made by the forwarder, by source, action and new state (failed: the dead letter)',
      ['source', 'action', 'state'],
    ),
    upkeepSeconds: histogram(
      'oncehook_embedded_upkeep_seconds',
      'Embedded PGlite only: how long each upkeep step (a table vacuum, the checkpoint) held the process, answering nothing meanwhile',
      ['step'],
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
    leasesReclaimed: counter('oncehook_leases_reclaimed_total', 'Attempts whose worker stopped mid-attempt, reclaimed as unknown outcomes'),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** One scrape's reads: the sources' tasks by state, the alerts' messages, and the attention queue's figures. */
interface Read {
  all: StateCount[];
  alertMessages: StateCount[];
  queue: QueueFigures;
}

/**
 * Figures read from the database on each scrape, so every instance reports the same truth whoever did the
 * work. One task tally serves all of them, in time that follows the tasks in flight rather than all tasks
 * ever; a scrape while the database is down reports nothing for them rather than stale numbers or zeros
 * (absence is what alerts on `absent()` look for).
 */
export function observeStore(
  metrics: Metrics,
  store: Store,
  tally: () => Promise<TaskTally> = taskTally(store),
  queue: () => Promise<QueueFigures> = () => queueFigures(store.db, []),
): void {
  let scrape: { at: number; read: Promise<Read | null> } | null = null;
  const states = () => {
    if (!scrape || performance.now() - scrape.at > 1000) {
      scrape = { at: performance.now(), read: Promise.all([tally(), queue()]).then(([{ tasks, alertMessages }, waiting]) => ({ all: tasks, alertMessages, queue: waiting }), () => null) };
    }
    return scrape.read;
  };
  const gauge = (name: string, help: string, read: (scraped: Read, set: (value: number, labels?: Record<string, string>) => void) => void, labelNames: string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [metrics.registry],
      async collect() {
        const scraped = await states();
        this.reset();
        if (scraped) read(scraped, (value, labels) => (labels ? this.set(labels, value) : this.set(value)));
        // reset() leaves an unlabeled gauge at 0, which would read as "none" and resolve alerts; removing its
        // one (empty) label set leaves the series out.
        else this.remove({});
      },
    });
  // Every state, 0 where none, so that a state's absence means the database did not answer.
  gauge(
    'oncehook_tasks',
    'Tasks by state, now',
    ({ all }, set) => Object.values(TASK_STATES).forEach((state) => set(all.find((s) => s.state === state)?.count ?? 0, { state })),
    ['state'],
  );
  gauge(
    'oncehook_alert_messages',
    "Alert messages (tasks of source _alerts) by state, now: counted apart from the sources' tasks",
    ({ alertMessages }, set) => Object.values(TASK_STATES).forEach((state) => set(alertMessages.find((s) => s.state === state)?.count ?? 0, { state })),
    ['state'],
  );
  gauge('oncehook_confirmed_effects', 'Tasks whose effect is confirmed (by a 2xx, a lookup or a person)', ({ all }, set) =>
    set(all.find((s) => s.state === 'succeeded')?.count ?? 0),
  );
  gauge('oncehook_tasks_unresolved', 'Tasks not succeeded, cancelled or superseded, retries in flight included', ({ all }, set) => set(summarize(all, isUnresolved).count));
  gauge('oncehook_tasks_unresolved_oldest_seconds', 'Age of the oldest unresolved task (0 when none)', ({ all }, set) =>
    set(summarize(all, isUnresolved).oldestAgeSeconds ?? 0),
  );
  // The attention queue's length, as the dashboard and `tasks --attention` show it.
  gauge(
    'oncehook_tasks_needing_attention',
    'Tasks waiting for a person: needs_review, outcome_unknown, failed (but those a replay did), awaiting_approval, pending steps whose predecessor will not succeed, and pending tasks a paused destination holds',
    ({ queue }, set) => set(queue.needsAttention.count),
  );
  gauge('oncehook_tasks_needing_attention_oldest_seconds', 'Age of the oldest task waiting for a person (0 when none)', ({ queue }, set) =>
    set(queue.needsAttention.oldestAgeSeconds ?? 0),
  );
  const syncs = store.diskSyncs;
  if (syncs) {
    const total = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers: [metrics.registry],
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    total('oncehook_embedded_disk_syncs_total', 'Embedded PGlite only: flushes to disk, one per commit and more at a checkpoint', () => syncs.count);
    total('oncehook_embedded_disk_sync_seconds_total', 'Embedded PGlite only: time the process spent waiting for them', () => syncs.seconds);
  }
}
