import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The figures an operator alerts on. One registry per app, so tests and several apps in one process never clash. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'oncehook_process_' });
  return {
    registry,
    deliveries: new Counter({
      name: 'oncehook_deliveries_total',
      help: 'Verified deliveries recorded, by source and decision',
      labelNames: ['source', 'decision'] as const,
      registers: [registry],
    }),
    rejections: new Counter({
      name: 'oncehook_rejections_total',
      help: 'Requests answered with an error and not recorded, by source and reason',
      labelNames: ['source', 'reason'] as const,
      registers: [registry],
    }),
    ackSeconds: new Histogram({
      name: 'oncehook_ack_seconds',
      help: 'Time from a request arriving to its answer, by source and status',
      labelNames: ['source', 'status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    forwardAttempts: new Counter({
      name: 'oncehook_forward_attempts_total',
      help: 'Sends and lookups made to downstream actions, by source, action and outcome class',
      labelNames: ['source', 'action', 'class'] as const,
      registers: [registry],
    }),
    forwardSeconds: new Histogram({
      name: 'oncehook_forward_seconds',
      help: 'Duration of requests to downstream actions, by source, action and kind (send or lookup)',
      labelNames: ['source', 'action', 'kind'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    taskTransitions: new Counter({
      name: 'oncehook_task_transitions_total',
      help: 'Task state changes made by the forwarder, by source, action and new state (failed: the dead letter)',
      labelNames: ['source', 'action', 'state'] as const,
      registers: [registry],
    }),
    leasesReclaimed: new Counter({
      name: 'oncehook_leases_reclaimed_total',
      help: 'Attempts whose worker stopped mid-attempt, reclaimed as unknown outcomes',
      registers: [registry],
    }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
