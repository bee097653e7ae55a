import { describe, expect, it } from 'vitest';
import { adminTokensFromEnv, AdminTokens, shortTokenLabels } from '../../../src/http/tokens.ts';

const SECRET = 'pasted-s3cret-token-value';
const refusal = (env: NodeJS.ProcessEnv) => {
  try {
    adminTokensFromEnv(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('adminTokensFromEnv', () => {
  it('reads one token as "admin" and labelled ones, the spaces between entries being layout', () => {
    expect(adminTokensFromEnv({ ONCEHOOK_ADMIN_TOKEN: 'one', ONCEHOOK_ADMIN_TOKENS: 'alice:two, bob:three ' })).toEqual({ admin: 'one', alice: 'two', bob: 'three' });
    expect(adminTokensFromEnv({})).toBeUndefined();
  });

  it('reads label:token:read as a token that can only look; a colon inside a token stays the token\'s', () => {
    const setting = adminTokensFromEnv({ ONCEHOOK_ADMIN_TOKENS: 'alice:tok1, support:tok3:read, wall:to:ken:read, bob:read' });
    expect(setting).toEqual({ alice: 'tok1', support: { token: 'tok3', access: 'read' }, wall: { token: 'to:ken', access: 'read' }, bob: 'read' });
    const tokens = new AdminTokens(setting!);
    expect([tokens.labelOf('tok3'), tokens.labelOf('tok3:read'), tokens.labelOf('to:ken')]).toEqual(['support', null, 'wall']);
    expect(['alice', 'support', 'wall', 'bob', 'nobody'].map((label) => tokens.readOnly(label))).toEqual([false, true, true, false, false]);
    expect(refusal({ ONCEHOOK_ADMIN_TOKENS: 'alice:tok1,support:tok1:read' })).toMatch(/entry 2 of 2 \(support\): its token is the same as entry 1 \(alice\)'s/);
  });

  it('names a malformed entry by its position, never showing what it holds', () => {
    for (const entries of [`alice:tok1,${SECRET}`, `alice:tok1, :${SECRET}`, `alice:tok1,bad label:${SECRET}`, `alice:tok1,${SECRET}:`]) {
      const message = refusal({ ONCEHOOK_ADMIN_TOKENS: entries });
      expect(message).toMatch(/^ONCEHOOK_ADMIN_TOKENS: entry 2 of 2 is not label:token/);
      expect(message).not.toContain(SECRET.slice(0, 6));
    }
  });

  it('takes labels that are names of object properties, and refuses a label given twice', () => {
    const setting = adminTokensFromEnv({ ONCEHOOK_ADMIN_TOKENS: 'constructor:t1,toString:t2,__proto__:t3,hasOwnProperty:t4' });
    expect(Object.entries(setting!)).toEqual([['constructor', 't1'], ['toString', 't2'], ['__proto__', 't3'], ['hasOwnProperty', 't4']]);
    expect(new AdminTokens(setting!).labelOf('t3')).toBe('__proto__');
    expect(refusal({ ONCEHOOK_ADMIN_TOKENS: 'alice:t1,alice:t2' })).toBe('ONCEHOOK_ADMIN_TOKENS: entry 2 of 2: the label "alice" is used twice');
    expect(refusal({ ONCEHOOK_ADMIN_TOKEN: 't0', ONCEHOOK_ADMIN_TOKENS: 'admin:t1' })).toMatch(/"admin" is used twice/);
  });

  it('refuses one token under two labels, naming both places and not the token', () => {
    expect(refusal({ ONCEHOOK_ADMIN_TOKENS: `alice:${SECRET},bob:other,carol:${SECRET}` })).toBe(
      "ONCEHOOK_ADMIN_TOKENS: entry 3 of 3 (carol): its token is the same as entry 1 (alice)'s: actions under the two could not be told apart — give each its own token",
    );
    expect(refusal({ ONCEHOOK_ADMIN_TOKEN: SECRET, ONCEHOOK_ADMIN_TOKENS: `alice:${SECRET}` })).toMatch(
      /^ONCEHOOK_ADMIN_TOKENS: entry 1 of 1 \(alice\): its token is the same as ONCEHOOK_ADMIN_TOKEN's:/,
    );
  });

  it('refuses a token nobody could present: whitespace around it, a line break in it, only whitespace', () => {
    for (const value of [`${SECRET}\n`, ` ${SECRET}`, '  ']) {
      const message = refusal({ ONCEHOOK_ADMIN_TOKEN: value });
      expect(message).toMatch(/^ONCEHOOK_ADMIN_TOKEN (starts or ends with whitespace|is empty or only whitespace)/);
      expect(message).not.toContain(SECRET.slice(0, 6));
    }
    const lines = refusal({ ONCEHOOK_ADMIN_TOKENS: `alice:${SECRET}\nbob:${SECRET}x` });
    expect(lines).toBe('ONCEHOOK_ADMIN_TOKENS: entry 1 of 1 (alice): its token holds a line break or another control character: separate entries with commas');
    // The one-token variable has no entries to separate: several tokens go in the labelled list.
    expect(refusal({ ONCEHOOK_ADMIN_TOKEN: `${SECRET}\n${SECRET}x` })).toBe(
      'ONCEHOOK_ADMIN_TOKEN holds a line break or another control character: remove it (one token, on one line); for several tokens, set ONCEHOOK_ADMIN_TOKENS="alice:tok1,bob:tok2"',
    );
    // An Authorization header cannot carry it: the CLI and curl could never send it.
    expect(refusal({ ONCEHOOK_ADMIN_TOKEN: '\u20acuro-token-of-thirty-chars' })).toMatch(/^ONCEHOOK_ADMIN_TOKEN holds a character an HTTP header cannot carry/);
    expect(adminTokensFromEnv({ ONCEHOOK_ADMIN_TOKEN: 'caf\u00e9-token' })).toEqual({ admin: 'caf\u00e9-token' });
  });
});

describe('shortTokenLabels', () => {
  it('names the labels of tokens short enough to guess', () => {
    expect(shortTokenLabels('dev')).toEqual(['admin']);
    expect(shortTokenLabels({ alice: 'a'.repeat(23), bob: 'b'.repeat(24) })).toEqual(['alice']);
  });
});
