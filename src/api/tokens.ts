import { createHash, timingSafeEqual } from 'node:crypto';

/** The admin tokens by label: one (`ONCEHOOK_ADMIN_TOKEN`, labelled "admin") or several, so actions are attributable. */
export type AdminTokenSetting = string | Readonly<Record<string, string>>;

/** `ONCEHOOK_ADMIN_TOKEN` and `ONCEHOOK_ADMIN_TOKENS="alice:tok1,bob:tok2"`; undefined (API off) when neither is set. */
export function adminTokensFromEnv(env: NodeJS.ProcessEnv): AdminTokenSetting | undefined {
  const labelled: Record<string, string> = {};
  if (env.ONCEHOOK_ADMIN_TOKEN) labelled.admin = env.ONCEHOOK_ADMIN_TOKEN;
  for (const entry of (env.ONCEHOOK_ADMIN_TOKENS ?? '').split(',').map((e) => e.trim()).filter(Boolean)) {
    const colon = entry.indexOf(':');
    const label = entry.slice(0, colon).trim();
    const token = entry.slice(colon + 1).trim();
    if (colon <= 0 || !/^[\w.@-]{1,64}$/.test(label) || token === '') {
      throw new Error(`ONCEHOOK_ADMIN_TOKENS: each entry must be label:token (label of letters, digits, ._@-), not "${label || entry.slice(0, 20)}…"`);
    }
    if (label in labelled) throw new Error(`ONCEHOOK_ADMIN_TOKENS: the label "${label}" is used twice`);
    labelled[label] = token;
  }
  return Object.keys(labelled).length > 0 ? labelled : undefined;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Knows the tokens and answers which label a presented token carries, in constant time. */
export class AdminTokens {
  readonly #digests: { label: string; digest: Buffer }[];

  constructor(setting: AdminTokenSetting) {
    const entries = typeof setting === 'string' ? [['admin', setting] as const] : Object.entries(setting);
    this.#digests = entries.filter(([, token]) => token !== '').map(([label, token]) => ({ label, digest: digest(token) }));
    if (new Set(this.#digests.map((d) => d.digest.toString('hex'))).size !== this.#digests.length) {
      throw new Error('two admin tokens are equal: actions could not be told apart');
    }
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

  /** The token of a label: the dashboard signs its sessions with it, so revoking a token ends its sessions. */
  secretOf(label: string): Buffer | null {
    return this.#digests.find((d) => d.label === label)?.digest ?? null;
  }
}
