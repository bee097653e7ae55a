import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { Logger } from '../log.ts';

/** A budget of failures: `burst` at once, then one more every `everyMs`. */
export interface Rate {
  burst: number;
  everyMs: number;
}

/**
 * Per client address, ten wrong tokens, then one every 6 s; from everywhere together, a hundred, then one every
 * 0.6 s, so guessing from many addresses is slowed too. A person who mistypes a few times never meets either.
 */
export const FAILED_SIGN_INS = { perAddress: { burst: 10, everyMs: 6_000 }, overall: { burst: 100, everyMs: 600 } };

/** Addresses remembered at most: past it, those whose budget has refilled are forgotten, then the oldest. */
const MAX_ADDRESSES = 10_000;

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
 * Slows guessing admin tokens at the API and the sign-in form, in memory (each web instance on its own). A
 * caller whose failures used up their budget, or while everyone's together did, gets no judgement at all —
 * right token or wrong — until the budget refills: answering a right guess meanwhile would let guessing go on at
 * full speed. So a flood of guesses can keep people out for a while (a correct token waits like a wrong one):
 * the price of not being guessable. Success costs nothing.
 */
export class SignInThrottle {
  readonly #addresses = new Map<string, Bucket>();
  readonly #overall: Bucket;

  constructor(
    private readonly logger: Logger,
    private readonly limits = FAILED_SIGN_INS,
    // Monotonic: a wall clock stepped back would leave every budget empty for as long as the step.
    private readonly now = () => performance.now(),
  ) {
    this.#overall = new Bucket(limits.overall, now());
  }

  /**
   * Judges a presented token with `verify` unless its address, or everyone, is out of budget. A wrong token is
   * counted against both and logged as a warning with the address and path, never with the token.
   */
  judge(address: string, path: string, verify: () => string | null): Judged {
    const now = this.now();
    const own = this.#addresses.get(address);
    const wait = Math.max(own?.waitSeconds(now) ?? 0, this.#overall.waitSeconds(now));
    if (wait > 0) return { retryAfterSeconds: wait };
    const label = verify();
    if (label !== null) return { label };
    const bucket = this.#failed(address, own, now);
    const throttledSeconds = Math.max(bucket.waitSeconds(now), this.#overall.waitSeconds(now));
    this.logger.warn({ address, path, ...(throttledSeconds > 0 ? { throttledSeconds } : {}) }, 'sign-in refused: not an admin token');
    return { wrong: true };
  }

  #failed(address: string, own: Bucket | undefined, now: number): Bucket {
    const bucket = own ?? new Bucket(this.limits.perAddress, now);
    bucket.take(now);
    this.#overall.take(now);
    // Re-inserted, so the map's order is the order of last failure: the oldest are forgotten first.
    this.#addresses.delete(address);
    this.#addresses.set(address, bucket);
    if (this.#addresses.size > MAX_ADDRESSES) this.#forget(now);
    return bucket;
  }

  #forget(now: number): void {
    for (const [key, other] of this.#addresses) if (other.level(now) >= this.limits.perAddress.burst) this.#addresses.delete(key);
    for (const key of this.#addresses.keys()) {
      if (this.#addresses.size <= MAX_ADDRESSES) break;
      this.#addresses.delete(key);
    }
  }
}

/**
 * The address of the socket the request came on. A proxy in front makes it the proxy's, so its clients share one
 * budget; X-Forwarded-For is not believed, since any client can write it. Requests built in tests have no socket.
 */
export function clientAddress(c: Context): string {
  return (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown';
}
