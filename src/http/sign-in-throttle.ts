import { isIPv6 } from 'node:net';
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { Logger } from '../log.ts';

/** A budget of failures: `burst` at once, then one more every `everyMs`. */
export interface Rate {
  burst: number;
  everyMs: number;
}

/**
 * Per client address, ten wrong tokens, then one every 6 s. Nothing counts the addresses together: a limit over all
 * of them would let a flood from a dozen addresses keep every operator out, a right token refused with the wrong
 * ones. Guessing from many addresses at once is what the tokens' length is for (start-up warns under 24
 * characters; 24 random hex characters are 2^96 tokens, out of any flood's reach), and judging a token costs a
 * hash and a compare. What
 * is bounded overall is the log: a hundred lines of wrong tokens, then one every 0.6 s, each saying how many went
 * unlogged before it, so a flood from many addresses does not flood the log.
 */
export const FAILED_SIGN_INS = { perAddress: { burst: 10, everyMs: 6_000 }, logged: { burst: 100, everyMs: 600 } };

/**
 * Addresses remembered at most (about 2 MiB): past it, the one whose last wrong token is oldest is forgotten, and
 * starts again with a full budget if it comes back. An address that only ever signs in right is never remembered.
 */
export const MAX_ADDRESSES = 10_000;

class Bucket {
  #level: number;
  #at: number;

  constructor(
    private readonly rate: Rate,
    now: number,
  ) {
    this.#level = rate.burst;
    this.#at = now;
  }

  level(now: number): number {
    return Math.min(this.rate.burst, this.#level + (now - this.#at) / this.rate.everyMs);
  }

  /** Seconds until one more failure is allowed: 0 when it is now. */
  waitSeconds(now: number): number {
    const level = this.level(now);
    return level >= 1 ? 0 : Math.ceil(((1 - level) * this.rate.everyMs) / 1000);
  }

  take(now: number): void {
    this.#level = this.level(now) - 1;
    this.#at = now;
  }
}

export type Judged = { label: string } | { wrong: true } | { retryAfterSeconds: number };

/**
 * Slows guessing admin tokens at the API and the sign-in form, in memory (each web instance on its own), per client
 * address. An address whose wrong tokens used up its budget gets no judgement at all — right token or wrong —
 * until the budget refills: answering a right guess meanwhile would let guessing go on at full speed. So a person
 * shares a budget only with whoever shares their address (a proxy, a NAT, an IPv6 /64); every other address is
 * judged as usual. Success costs nothing.
 */
export class SignInThrottle {
  /** In the order of last failure, oldest first: the one to forget first. */
  readonly #addresses = new Map<string, Bucket>();
  readonly #logged: Bucket;
  #unlogged = 0;

  constructor(
    private readonly logger: Logger,
    private readonly limits = FAILED_SIGN_INS,
    // Monotonic: a wall clock stepped back would leave every budget empty for as long as the step.
    private readonly now = () => performance.now(),
  ) {
    this.#logged = new Bucket(limits.logged, now());
  }

  /** Addresses with wrong tokens remembered: at most MAX_ADDRESSES. */
  get remembered(): number {
    return this.#addresses.size;
  }

  /**
   * Judges a presented token with `verify` unless its address is out of budget. A wrong token is counted against
   * its address and logged as a warning with the address and path, never with the token.
   */
  judge(address: string, path: string, verify: () => string | null): Judged {
    const now = this.now();
    const key = addressKey(address);
    const own = this.#addresses.get(key);
    const wait = own?.waitSeconds(now) ?? 0;
    if (wait > 0) return { retryAfterSeconds: wait };
    const label = verify();
    if (label !== null) return { label };
    const bucket = this.#failed(key, own, now);
    this.#log(now, { address, path, ...(bucket.waitSeconds(now) > 0 ? { throttledSeconds: bucket.waitSeconds(now) } : {}) });
    return { wrong: true };
  }

  #failed(key: string, own: Bucket | undefined, now: number): Bucket {
    const bucket = own ?? new Bucket(this.limits.perAddress, now);
    bucket.take(now);
    // Re-inserted, so the map's order is the order of last failure.
    this.#addresses.delete(key);
    this.#addresses.set(key, bucket);
    if (this.#addresses.size > MAX_ADDRESSES) this.#addresses.delete(this.#addresses.keys().next().value!);
    return bucket;
  }

  #log(now: number, fields: Record<string, unknown>): void {
    if (this.#logged.waitSeconds(now) > 0) {
      this.#unlogged++;
      return;
    }
    this.#logged.take(now);
    this.logger.warn({ ...fields, ...(this.#unlogged > 0 ? { unlogged: this.#unlogged } : {}) }, 'sign-in refused: not an admin token');
    this.#unlogged = 0;
  }
}

/**
 * What one budget belongs to: an IPv4 address, or an IPv6 address's /64 — one host's or one network's share, as
 * a provider hands them out, so a host cannot draw a fresh budget from each of its 2^64 addresses.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  const bare = address.replace(/%.*$/, '');
  if (!isIPv6(bare)) return address;
  const [head = '', tail] = bare.split('::');
  const groupsOf = (part: string) => (part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])));
  const [left, right] = [groupsOf(head), groupsOf(tail ?? '')];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/**
 * The address of the socket the request came on. A proxy in front makes it the proxy's, so its clients share one
 * budget; X-Forwarded-For is not believed, since any client can write it. Requests built in tests have no socket.
 */
export function clientAddress(c: Context): string {
  return (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown';
}
