import type { AlertCondition } from '../config/alerts.ts';
import type { Config } from '../config/schema.ts';
import { taskId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { periodic } from '../periodic.ts';
import { ALERTS_SOURCE, alertRound, type AlertMessage, type AlertStateRow, type Observed } from '../store/atomic/alerts.ts';
import type { Store } from '../store/connect.ts';
import { onLane } from '../store/lane.ts';
import { decide, look } from './decide.ts';
import { alertEvent, messageBody } from './messages.ts';

/** How often the conditions are looked at: an alert is about minutes of work waiting, a few seconds late is fine. */
export const ALERT_ROUND_MS = 5000;

/** The ID of an alert's n-th message: the same in every instance, so a message is made once. */
export const messageId = (alert: string, condition: string, sequence: number) => taskId(ALERTS_SOURCE, `${condition}/${sequence}`, alert);

/** Every alert's every condition, decided for one round: the messages to make and the standings after. */
export function decideRound(config: Config, observed: Observed, states: AlertStateRow[]): { messages: AlertMessage[]; states: AlertStateRow[] } {
  const byKey = new Map(states.map((s) => [`${s.alert}\n${s.condition}`, s]));
  const messages: AlertMessage[] = [];
  const next: AlertStateRow[] = [];
  for (const [alert, settings] of Object.entries(config.alerts)) {
    for (const condition of settings.on as AlertCondition[]) {
      const state = byKey.get(`${alert}\n${condition}`) ?? { alert, condition, open: false, lastSentAt: null, sequence: 0, gathered: {} };
      const seen = look(condition, observed, settings.unresolvedAge);
      const decided = decide(state, seen, settings.minIntervalSeconds * 1000, observed.at);
      next.push({ alert, condition, ...decided.next });
      if (decided.type === null) continue;
      const event = alertEvent({ type: decided.type, alert, condition, gathered: decided.gathered, total: seen.total, publicUrl: config.publicUrl, at: observed.at });
      const sequence = decided.next.sequence;
      messages.push({
        id: messageId(alert, condition, sequence),
        alert,
        condition,
        type: decided.type,
        body: messageBody(settings.format, event),
        after: sequence > 1 ? messageId(alert, condition, sequence - 1) : null,
      });
    }
  }
  return { messages, states: next };
}

/**
 * Looks at the alerts' conditions every few seconds, in every worker process: one instance at a time does a round
 * (the others find its lock taken), so each message is made once. Without alerts configured a round still consumes
 * the noted entries, which would otherwise pile up.
 */
export function startAlertWatcher(config: Config, store: Store, logger: Logger, everyMs = ALERT_ROUND_MS) {
  // A connection of its own, given up when it goes silent: a round hanging on the pool's would hold one of its
  // connections, and stop every later round, until TCP gives up.
  const lane = store.lane();
  const stallMs = config.limits.writeStallMs;
  const stall = { ms: stallMs, onStall: () => logger.warn(`no answer from PostgreSQL in ${stallMs} ms: abandoning the alert round's connection`) };
  const rounds = periodic(
    everyMs,
    async () => {
      const made = await onLane(lane, stall, alertRound(lane.db, (observed, states) => decideRound(config, observed, states)));
      if (made) logger.info({ messages: made }, 'alert messages queued');
      return made;
    },
    (error) => logger.warn({ err: error }, 'an alert round failed; the next one looks again'),
  );
  return {
    ...rounds,
    async stop(): Promise<void> {
      await rounds.stop();
      await lane.close();
    },
  };
}
