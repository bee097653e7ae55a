import { describe, expect, it } from 'vitest';
import { isRetryable, isUnreachable } from '../../../src/store/retryable.ts';

describe('isRetryable', () => {
  it('retries a dead connection or a lost race, found on the error or the cause drizzle wraps it in', () => {
    expect(isRetryable(Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' }))).toBe(true);
    expect(isRetryable(new Error('Failed query', { cause: Object.assign(new Error('terminating'), { code: '57P01' }) }))).toBe(true);
    expect(isRetryable(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(true);
  });

  it('does not retry what would fail again: a refused connection, a bad statement, an unknown error', () => {
    expect(isRetryable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isRetryable(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
    expect(isRetryable(new Error('something else'))).toBe(false);
    expect(isRetryable(undefined)).toBe(false);
  });

  it('counts a host that target_session_attrs refuses as unreachable, not as a connection lost in use', () => {
    const standby = new Error('Failed query', { cause: Object.assign(new Error('write TARGET_SESSION_ATTRS_UNMET db2:5432'), { code: 'TARGET_SESSION_ATTRS_UNMET' }) });
    expect(isUnreachable(standby)).toBe(true);
    expect(isRetryable(standby)).toBe(false);
  });
});
