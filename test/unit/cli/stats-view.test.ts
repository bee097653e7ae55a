import { describe, expect, it } from 'vitest';
import type { StatsAnswer } from '../../../src/cli/answers.ts';
import { statsView } from '../../../src/cli/views.ts';

const stats = (alertMessages: Record<string, number>) =>
  ({
    events: 38,
    deliveries: 40,
    decisions: { accepted: 38, duplicate_delivery: 2 },
    confirmedEffects: 38,
    unresolved: { count: 0, oldestAgeSeconds: null },
    needsAttention: { count: 0, oldestAgeSeconds: null },
    pausedDestinations: 0,
    tasks: [{ state: 'succeeded', count: 38, oldestAgeSeconds: 60 }],
    attempts: { succeeded: 38 },
    alertMessages,
  }) as unknown as StatsAnswer;

describe('oncehook stats', () => {
  it("shows oncehook's alert messages in a table of their own, apart from the sources' tasks", () => {
    const view = statsView(stats({ succeeded: 9, pending: 1 }));
    expect(view).toMatch(/^confirmed effects\s+38$/m);
    expect(view.endsWith('\n\nALERT MESSAGES  COUNT\nsucceeded       9\npending         1')).toBe(true);
  });

  it('leaves the table out where no alert message was made', () => {
    expect(statsView(stats({}))).not.toContain('ALERT MESSAGES');
  });
});
