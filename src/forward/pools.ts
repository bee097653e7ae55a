import { Pool } from 'undici';

/**
 * One undici pool per destination origin and connect timeout: keep-alive connections are reused between
 * tasks bound for the same downstream, and at most `connections` requests reach it at once.
 */
export class Pools {
  readonly #pools = new Map<string, Pool>();
  readonly #connections: number;

  constructor(connections: number) {
    this.#connections = connections;
  }

  for(origin: string, connectTimeoutMs: number): Pool {
    const key = `${origin} ${connectTimeoutMs}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      pool = new Pool(origin, { connections: this.#connections, connect: { timeout: connectTimeoutMs } });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }
}
