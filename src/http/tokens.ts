import { createHash, scryptSync, timingSafeEqual } from 'node:crypto';

/** A token that can look but not decide: support staff's, a dashboard on a wall. */
export interface ReadOnlyToken {
  token: string;
  access: 'read';
}

/**
 * The admin tokens by label: one (`ONCEHOOK_ADMIN_TOKEN`, labelled "admin") or several, so actions are
 * attributable. A token given as a string can decide; a `ReadOnlyToken` can only look.
 */
export type AdminTokenSetting = string | Readonly<Record<string, string | ReadOnlyToken>>;

/** The suffix of an `ONCEHOOK_ADMIN_TOKENS` entry whose token can only look: `support:tok3:read`. */
export const READ_ONLY_SUFFIX = ':read';

const entriesOf = (setting: AdminTokenSetting): (readonly [string, string, boolean])[] =>
  typeof setting === 'string'
    ? [['admin', setting, false]]
    : Object.entries(setting).map(([label, given]) => (typeof given === 'string' ? [label, given, false] : [label, given.token, true]));

/** Fewer characters than this can be guessed at the sign-in form or the API, however slowly: start-up warns. */
export const SHORT_TOKEN = 24;

/**
 * A token has to be typed into the sign-in form or sent in an Authorization header, which trim and cannot carry a
 * line break. Whitespace around one (a value read from a file with its newline) is refused, not trimmed — as a
 * config secret is — and so is a control character inside (entries put on lines of their own rather than between
 * commas): either way the API would be on with a token nobody can present. `lineBreak` is what to do about one,
 * which depends on the variable. No message holds any token text.
 */
function tokenProblem(token: string, lineBreak: string): string | null {
  if (token.trim() === '') return 'is empty or only whitespace';
  if (token !== token.trim()) return 'starts or ends with whitespace (a line break read from a file?): remove it';
  if (/[\u0000-\u001f\u007f]/.test(token)) return `holds a line break or another control character: ${lineBreak}`;
  if (/[^\u0000-\u00ff]/.test(token)) return 'holds a character an HTTP header cannot carry (past Latin-1): the API could never be given it';
  return null;
}

/**
 * `ONCEHOOK_ADMIN_TOKEN` and `ONCEHOOK_ADMIN_TOKENS="alice:tok1,bob:tok2"`; undefined (API off) when neither is set.
 * A malformed entry is named by its position: what it holds may be token text.
 */
export function adminTokensFromEnv(env: NodeJS.ProcessEnv): AdminTokenSetting | undefined {
  // A Map: a label like `constructor` or `__proto__` is a label, not a property every object already has.
  const labelled = new Map<string, string | ReadOnlyToken>();
  // Where each token was given: one given twice is refused naming both places, so the person knows which to change.
  const givenAt = new Map<string, string>();
  if (env.ONCEHOOK_ADMIN_TOKEN) {
    // Has no entries to separate: lines in it are most likely several tokens, which only the labelled list holds.
    const lineBreak = 'remove it (one token, on one line); for several tokens, set ONCEHOOK_ADMIN_TOKENS="alice:tok1,bob:tok2"';
    const problem = tokenProblem(env.ONCEHOOK_ADMIN_TOKEN, lineBreak);
    if (problem) throw new Error(`ONCEHOOK_ADMIN_TOKEN ${problem}`);
    labelled.set('admin', env.ONCEHOOK_ADMIN_TOKEN);
    givenAt.set(env.ONCEHOOK_ADMIN_TOKEN, 'ONCEHOOK_ADMIN_TOKEN');
  }
  // Spaces around an entry are the list's layout ("alice:tok1, bob:tok2"), not part of a token.
  const entries = (env.ONCEHOOK_ADMIN_TOKENS ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const at = `ONCEHOOK_ADMIN_TOKENS: entry ${i + 1} of ${entries.length}`;
    const colon = entry.indexOf(':');
    const label = entry.slice(0, colon).trim();
    // `label:token:read`: a token is everything between the first colon and the suffix, colons included.
    const readOnly = colon > 0 && entry.endsWith(READ_ONLY_SUFFIX) && entry.length - READ_ONLY_SUFFIX.length > colon + 1;
    const token = entry.slice(colon + 1, readOnly ? -READ_ONLY_SUFFIX.length : undefined).trim();
    if (colon <= 0 || !/^[\w.@-]{1,64}$/.test(label) || token === '') {
      throw new Error(`${at} is not label:token (a label of letters, digits and ._@-, a colon, then the token)`);
    }
    const problem = tokenProblem(token, 'separate entries with commas');
    if (problem) throw new Error(`${at} (${label}): its token ${problem}`);
    if (labelled.has(label)) throw new Error(`${at}: the label "${label}" is used twice`);
    const earlier = givenAt.get(token);
    if (earlier) {
      throw new Error(`${at} (${label}): its token is the same as ${earlier}'s: actions under the two could not be told apart — give each its own token`);
    }
    labelled.set(label, readOnly ? { token, access: 'read' } : token);
    givenAt.set(token, `entry ${i + 1} (${label})`);
  }
  return labelled.size > 0 ? Object.fromEntries(labelled) : undefined;
}

/** The labels whose token is shorter than SHORT_TOKEN: start-up names them, never the tokens. */
export function shortTokenLabels(setting: AdminTokenSetting): string[] {
  return entriesOf(setting).filter(([, token]) => token !== '' && token.length < SHORT_TOKEN).map(([label]) => label);
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The key a label's dashboard sessions are signed with. Slow on purpose (about 30 ms, once per token at start):
 * a session cookie that leaks lets whoever holds it test guesses of the token offline, one derivation each.
 * Every web instance with the same token derives the same key, so any of them can check a session.
 */
const sessionKey = (token: string) => scryptSync(token, 'oncehook-ui-session', 32, { N: 2 ** 14, r: 8, p: 1 });

/** Knows the tokens and answers which label a presented token carries, in constant time. */
export class AdminTokens {
  readonly #digests: { label: string; digest: Buffer; sessionKey: Buffer; readOnly: boolean }[];

  constructor(setting: AdminTokenSetting) {
    this.#digests = entriesOf(setting)
      .filter(([, token]) => token !== '')
      .map(([label, token, readOnly]) => ({ label, digest: digest(token), sessionKey: sessionKey(token), readOnly }));
    // The CLI refuses this earlier, naming the entries (adminTokensFromEnv); this guards a setting given in code.
    const hashes = this.#digests.map((d) => d.digest.toString('hex'));
    if (new Set(hashes).size !== hashes.length) throw new Error('two admin tokens are equal: actions could not be told apart');
  }

  get empty(): boolean {
    return this.#digests.length === 0;
  }

  /**
   * The label of `presented`, or null. Hashing first makes every compare the same length, and every token is
   * compared, so the time taken says nothing about which one (or how much of one) matched.
   */
  labelOf(presented: string): string | null {
    const candidate = digest(presented);
    let found: string | null = null;
    for (const { label, digest: expected } of this.#digests) if (timingSafeEqual(candidate, expected)) found = label;
    return found;
  }

  /** Whether a label's token can only look: every request that would change something is refused. */
  readOnly(label: string): boolean {
    return this.#digests.find((d) => d.label === label)?.readOnly ?? false;
  }

  /** The session key of a label's token: revoking or rotating the token ends its sessions. */
  secretOf(label: string): Buffer | null {
    return this.#digests.find((d) => d.label === label)?.sessionKey ?? null;
  }
}
