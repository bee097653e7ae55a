import { OPERATOR_RULES, decisionsFor, type OperatorKind, type TaskDecision } from '../store/operator-rules.ts';
import { Csrf } from './layout.tsx';

const LABEL: Record<OperatorKind, string> = {
  approve: 'Approve',
  resolve: 'Resolve',
  retry: 'Retry',
  cancel: 'Cancel',
  replay: 'Replay',
  assign: 'Assign',
};

const buttonClass = (kind: TaskDecision) => (kind === 'resolve' || kind === 'approve' ? 'primary' : kind === 'cancel' ? 'danger' : undefined);

/**
 * One row's recovery decisions in one form: a required note, a reference when resolve is allowed, and a
 * button per decision its state allows (each button posts to its own action). Enter in a field presses the
 * form's default button, its first: a disabled one, so Enter decides nothing — pressed in the reference field,
 * it used to approve, a send, where the person meant to resolve.
 */
export function InlineDecisions({ taskId, state, bodyPurged, csrf, back }: { taskId: string; state: string; bodyPurged: boolean; csrf: string; back: string }) {
  const kinds = decisionsFor(state, bodyPurged);
  if (kinds.length === 0) return <span class="muted">—</span>;
  const base = `/ui/tasks/${encodeURIComponent(taskId)}`;
  return (
    <form class="inline" method="post" action={`${base}/${kinds[0]}`}>
      <button type="submit" disabled hidden aria-hidden="true" tabindex={-1} />
      <Csrf token={csrf} />
      <input type="hidden" name="back" value={back} />
      <input name="note" required placeholder="note: why" aria-label={`note for ${taskId}`} maxlength={2000} />
      {kinds.includes('resolve') ? <input name="reference" placeholder="reference" aria-label={`reference for ${taskId}`} maxlength={500} /> : null}
      {kinds.map((kind) => (
        <button type="submit" formaction={`${base}/${kind}`} class={buttonClass(kind)} title={OPERATOR_RULES[kind].does}>
          {LABEL[kind]}
        </button>
      ))}
    </form>
  );
}

/** The task page's decision cards: each with what it does and a required note. */
export function DecisionCards({ taskId, state, bodyPurged, owner, csrf }: { taskId: string; state: string; bodyPurged: boolean; owner: string | null; csrf: string }) {
  const base = `/ui/tasks/${encodeURIComponent(taskId)}`;
  const kinds: OperatorKind[] = [...decisionsFor(state, bodyPurged), ...((OPERATOR_RULES.assign.from as readonly string[]).includes(state) ? (['assign'] as const) : [])];
  if (kinds.length === 0) return <p class="muted">No decision is open in this state.</p>;
  return (
    <div class="decisions">
      {kinds.map((kind) => (
        <form class="decision" method="post" action={`${base}/${kind}`}>
          <Csrf token={csrf} />
          <h3>{LABEL[kind]}</h3>
          <p>{OPERATOR_RULES[kind].does}.</p>
          {kind === 'resolve' ? <input name="reference" required placeholder="reference of the effect, e.g. CRM-42" maxlength={500} aria-label="reference" /> : null}
          {kind === 'assign' ? <input name="owner" value={owner ?? ''} placeholder="owner (empty: nobody)" maxlength={100} aria-label="owner" /> : null}
          <textarea name="note" required placeholder="note: why (recorded with your name)" maxlength={2000} aria-label={`note for ${kind}`} />
          <div class="row">
            <button type="submit" class={kind === 'assign' ? undefined : buttonClass(kind)}>
              {LABEL[kind]}
            </button>
          </div>
        </form>
      ))}
    </div>
  );
}
