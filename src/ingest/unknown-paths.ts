import type { Logger } from '../log.ts';

/** Paths named in the log per minute; requests to any further ones are summed in one line. */
const NAMED_PATHS = 20;
/** A path is attacker-chosen: a long one is shortened, so a line stays a line. */
const PATH_CHARS = 200;

/**
 * A sender pointed at a wrong URL (`/in/shop-old`, `/in/`) is told 404 and retries for days; the operator sees
 * it only if it is logged. A flood of such requests must not fill the disk, so each path gets one line a minute
 * at most: the first request at once, and then, each minute it goes on, one line with how many more came.
 */
export class UnknownPathLog {
  /** The paths logged in this minute, each with the requests to it since its last line. */
  #paths = new Map<string, number>();
  /** Requests this minute to paths past the NAMED_PATHS. */
  #others = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly logger: Logger,
    private readonly windowMs = 60_000,
  ) {}

  note(method: string, rawPath: string): void {
    const path = rawPath.length > PATH_CHARS ? `${rawPath.slice(0, PATH_CHARS)}…` : rawPath;
    this.#timer ??= this.#schedule();
    const since = this.#paths.get(path);
    if (since !== undefined) this.#paths.set(path, since + 1);
    else if (this.#paths.size >= NAMED_PATHS) this.#others += 1;
    else {
      this.#paths.set(path, 0);
      this.logger.warn({ method, path }, `${method} ${path}: no such source is configured, answered 404 — is a sender pointed at a wrong URL?`);
    }
  }

  #schedule(): NodeJS.Timeout {
    // Never what keeps a process alive: a summary left unwritten at exit is still counted in the metric.
    return setTimeout(() => this.#endMinute(), this.windowMs).unref();
  }

  /** One line for each path asked for again since its line; those stay named in the next minute, so it has no second. */
  #endMinute(): void {
    const ended = this.#paths;
    this.#paths = new Map();
    this.#timer = null;
    for (const [path, more] of ended) {
      if (more === 0) continue;
      this.logger.warn({ path, count: more }, `${path}: ${more} more requests for no configured source in the last minute, answered 404`);
      this.#paths.set(path, 0);
    }
    if (this.#others > 0) {
      this.logger.warn(
        { count: this.#others },
        `${this.#others} requests to further unknown ingress paths in the last minute, answered 404 (${NAMED_PATHS} paths are named a minute at most)`,
      );
      this.#others = 0;
    }
    if (this.#paths.size > 0) this.#timer = this.#schedule();
  }
}
