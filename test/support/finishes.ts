import type { ClaimedTask } from '../../src/store/atomic/claim.ts';
import type { AttemptFinish } from '../../src/store/atomic/finish.ts';

/** A worker's finish of a claimed attempt: a 201 success, unless `change` says otherwise. */
export function finishOf(claimed: Pick<ClaimedTask, 'id' | 'claim'>, owner: string, change: Partial<AttemptFinish> = {}): AttemptFinish {
  return {
    taskId: claimed.id,
    claim: claimed.claim!,
    owner,
    status: 201,
    durationMs: 3,
    class: 'success',
    error: null,
    reference: null,
    requestSha256: null,
    decision: 'succeeded',
    state: 'succeeded',
    delayMs: 0,
    notBefore: null,
    destination: null,
    ...change,
  };
}
