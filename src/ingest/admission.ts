import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';

/** A token bucket: `burst` at most, refilled at `perMs`. */
interface Bucket {
  tokens: number;
  at: number;
  perMs: number;
  burst: number;
}

/** One config's doors onto the process's counts (`Admission.for`). */
export interface AdmissionGate {
  /** Lets one of a source's bodies be read, or throws; the caller must call the returned release once read. */
  toRead(sourceId: string): () => void;
  /** Takes one of the global in-flight slots for a verified delivery, or throws; release it exactly once. */
  toWork(): () => void;
}

/**
 * Turns a flood away at two doors, each with Retry-After; senders retry, so nothing is lost.
 *
 * - Before a body is read (`toRead`): a source past its rate is answered 429, and past its own cap on bodies
 *   being read 503. Anyone can open a connection and send a body slowly, so what it holds is counted against its
 *   source only: a slow or anonymous client can shut out the source it names, never another.
 * - Once the delivery is verified (`toWork`): past the global in-flight cap every delivery is answered 503. Only
 *   what the sender's signature vouches for takes a share of the capacity every source needs.
 *
 * Memory stays bounded by the sources' caps times their body limits, plus the global cap times the largest.
 *
 * The counts and the buckets belong to the process, not to a config: a reload must not hand a source a fresh
 * burst, nor let the requests still in the replaced app's hands go uncounted against the new caps.
 */
export class Admission {
  private inFlight = 0;
  private readonly reading = new Map<string, number>();
  private readonly buckets = new Map<string, Bucket>();

  /** The doors for an app made for `config`; a source's bucket keeps its tokens (at most its new burst). */
  for(config: Config): AdmissionGate {
    const now = performance.now();
    for (const id of this.buckets.keys()) if (!config.sources[id]?.rateLimit) this.buckets.delete(id);
    for (const [id, source] of Object.entries(config.sources)) {
      if (!source.rateLimit) continue;
      const burst = source.rateLimit.burst ?? Math.max(1, Math.ceil(source.rateLimit.perSecond));
      const perMs = source.rateLimit.perSecond / 1000;
      const was = this.buckets.get(id);
      if (was) refill(was, now);
      this.buckets.set(id, { tokens: Math.min(burst, was?.tokens ?? burst), at: now, perMs, burst });
    }
    return { toRead: (sourceId) => this.toRead(config, sourceId), toWork: () => this.toWork(config) };
  }

  private toRead(config: Config, sourceId: string): () => void {
    const bucket = this.buckets.get(sourceId);
    if (bucket) {
      refill(bucket, performance.now());
      if (bucket.tokens < 1) {
        const waitSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / bucket.perMs / 1000));
        throw new HttpError(429, 'rate_limited', `source "${sourceId}" is over its rate limit; retry later`, {
          'retry-after': String(waitSeconds),
        });
      }
      bucket.tokens -= 1;
    }
    const reading = this.reading.get(sourceId) ?? 0;
    if (reading >= config.sources[sourceId]!.maxBodiesReading) {
      throw new HttpError(503, 'source_busy', `too many of source "${sourceId}"'s deliveries are still arriving; retry later`, { 'retry-after': '1' });
    }
    this.reading.set(sourceId, reading + 1);
    return once(() => {
      const left = this.reading.get(sourceId)! - 1;
      if (left === 0) this.reading.delete(sourceId);
      else this.reading.set(sourceId, left);
    });
  }

  private toWork(config: Config): () => void {
    if (this.inFlight >= config.limits.maxInFlight) {
      throw new HttpError(503, 'overloaded', 'too many deliveries in progress; retry later', { 'retry-after': '1' });
    }
    this.inFlight++;
    return once(() => this.inFlight--);
  }
}

function refill(bucket: Bucket, now: number): void {
  bucket.tokens = Math.min(bucket.burst, bucket.tokens + (now - bucket.at) * bucket.perMs);
  bucket.at = now;
}

function once(release: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
  };
}
