import { OPERATOR_RULES, decisionsFor, type OperatorKind, type TaskDecision } from '../store/operator-rules.ts';
import { taskHref } from './hrefs.ts';
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
  const allowed = decisionsFor(state, bodyPurged);
  // A replay is decided on the task page, which shows the replays made so far and sends the latest with the form.
  const kinds = allowed.filter((kind) => kind !== 'replay');
  const base = taskHref(taskId);
  const replay = allowed.includes('replay') ? (
    <a href={base} title={`${OPERATOR_RULES.replay.does}: on the task page, beside its earlier replays`}>
      Replay…
    </a>
  ) : null;
  if (kinds.length === 0) return replay ?? <span class="muted">—</span>;
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
      {replay}
    </form>
  );
}

/**
 * The task page's decision cards: each with what it does and a required note. The replay card carries the
 * latest replay the page shows (`latestReplay`, or "none"), so submitting it twice makes one replay.
 */
export function DecisionCards(props: {
  taskId: string;
  state: string;
  bodyPurged: boolean;
  unshaped: boolean;
  owner: string | null;
  latestReplay: string | null;
  csrf: string;
}) {
  const { taskId, state, bodyPurged, unshaped, owner, latestReplay, csrf } = props;
  const base = taskHref(taskId);
  const kinds: OperatorKind[] = [...decisionsFor(state, bodyPurged, unshaped), ...((OPERATOR_RULES.assign.from as readonly string[]).includes(state) ? (['assign'] as const) : [])];
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
          {kind === 'replay' ? <LatestReplay latest={latestReplay} /> : null}
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

/** Where a form that decides would be, for a session of a read-only token. */
export const ReadOnlyNote = ({ inline = false }: { inline?: boolean }) =>
  inline ? <span class="muted">read-only</span> : <p class="muted">Signed in with a read-only token: you can look, not decide.</p>;

/** What the person saw: the latest replay, sent back with the form and said in words. */
function LatestReplay({ latest }: { latest: string | null }) {
  return (
    <>
      <input type="hidden" name="after" value={latest ?? 'none'} />
      {latest ? <p class="muted">Already replayed, latest as {latest}: this would be one more effect.</p> : null}
    </>
  );
}
