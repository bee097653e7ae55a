import { jsx } from 'hono/jsx';
import { describe, expect, it } from 'vitest';
import { DecisionCards, InlineDecisions } from '../../src/ui/decide-forms.tsx';

const html = (node: unknown) => String(node);

describe('decision forms', () => {
  it('in a row: the first submit button, which Enter presses, is a disabled one; a replay is left to the task page', () => {
    const row = html(jsx(InlineDecisions, { taskId: 't_1', state: 'failed', bodyPurged: false, csrf: 'c', back: '/ui/attention' }));
    const buttons = [...row.matchAll(/<button[^>]*>/g)].map((match) => match[0]);
    expect(buttons[0]).toMatch(/type="submit" disabled=""/);
    expect(buttons.slice(1).map((button) => /formaction="\/ui\/tasks\/t_1\/(\w+)"/.exec(button)![1])).toEqual(['resolve', 'retry', 'cancel']);
    expect(row).toContain('<a href="/ui/tasks/t_1"');
    const purged = html(jsx(InlineDecisions, { taskId: 't_1', state: 'failed', bodyPurged: true, csrf: 'c', back: '/ui/attention' }));
    expect(purged).not.toContain('Replay');
  });

  it('on the task page: the replay card sends the latest replay it shows, or "none"', () => {
    const card = (latestReplay: string | null) =>
      html(jsx(DecisionCards, { taskId: 't_1', state: 'succeeded', bodyPurged: false, unshaped: false, owner: null, latestReplay, csrf: 'c' }));
    expect(card(null)).toContain('<input type="hidden" name="after" value="none"/>');
    expect(card('t_2')).toContain('<input type="hidden" name="after" value="t_2"/>');
    expect(card('t_2')).toMatch(/Already replayed, latest as t_2/);
  });
});
