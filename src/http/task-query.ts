import { z } from 'zod';
import { TASK_STATES } from '../store/decisions.ts';
import { ATTENTION_STATES } from '../store/operator-rules.ts';

const state = z.enum(Object.values(TASK_STATES) as [string, ...string[]]);
/**
 * `state=failed,needs_review` selects either. An empty entry is skipped, as the CLI skips it; a list with none
 * left is refused rather than read as no filter. A state that is none is named with the ones there are. The API's
 * list and bulk decisions and the dashboard's Tasks page read states by these rules.
 */
export const stateList = z.array(state).min(1, 'names no state: give one or several, comma-separated');
export const splitStates = (text: string) => text.split(',').map((s) => s.trim()).filter(Boolean);
export const states = z.string().transform(splitStates).pipe(stateList);

/**
 * With `attention`, a state the queue never holds would make the list empty for a reason the caller did not ask
 * for: added as an issue on `state`.
 */
export function checkAttentionStates(query: { attention?: boolean | undefined; state?: readonly string[] | undefined }, ctx: z.RefinementCtx): void {
  const others = query.attention ? (query.state ?? []).filter((s) => !ATTENTION_STATES.includes(s as never)) : [];
  if (others.length > 0) {
    const message = `${others.join(',')}: not among the states attention lists (${ATTENTION_STATES.join(', ')}); drop attention, or that state`;
    ctx.addIssue({ code: 'custom', path: ['state'], message });
  }
}
