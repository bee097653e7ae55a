import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';

/**
 * Turns a flood away at the door, before a body is read: a source past its rate is answered 429, and past the
 * global in-flight cap every delivery is answered 503, both with Retry-After. Senders retry both, so nothing
 * is lost, and memory stays bounded by the cap times the body limit.
 */
export class Admission {
  private inFlight = 0;
  private readonly buckets = new Map<string, { tokens: number; at: number; perMs: number; burst: number }>();

  constructor(private readonly config: Config) {
    for (const [id, source] of Object.entries(config.sources)) {
      if (!source.rateLimit) continue;
      const burst = source.rateLimit.burst ?? Math.max(1, Math.ceil(source.rateLimit.perSecond));
      this.buckets.set(id, { tokens: burst, at: performance.now(), perMs: source.rateLimit.perSecond / 1000, burst });
    }
  }

  /** Admits one delivery or throws; the caller must call the returned release exactly once. */
  enter(sourceId: string): () => void {
    const bucket = this.buckets.get(sourceId);
    if (bucket) {
      const now = performance.now();
      bucket.tokens = Math.min(bucket.burst, bucket.tokens + (now - bucket.at) * bucket.perMs);
      bucket.at = now;
      if (bucket.tokens < 1) {
        const waitSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / bucket.perMs / 1000));
        throw new HttpError(429, 'rate_limited', `source "${sourceId}" is over its rate limit; retry later`, {
          'retry-after': String(waitSeconds),
        });
      }
      bucket.tokens -= 1;
    }
    if (this.inFlight >= this.config.limits.maxInFlight) {
      throw new HttpError(503, 'overloaded', 'too many deliveries in progress; retry later', { 'retry-after': '1' });
    }
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
    };
  }
}
