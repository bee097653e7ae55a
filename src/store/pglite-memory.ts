import { setFlagsFromString } from 'node:v8';

/*
 * Where the embedded database's memory goes, and what is kept. Resident memory of PGlite alone, restarted on a
 * new cluster (process included, ~45 MiB of it Node's own), on 2026-12-03:
 *
 *   as PGlite starts it                          289 MiB, 321 once settled
 *   shared_buffers 16 MB instead of 128 MB       171, 196: PostgreSQL fills its buffer pool in WebAssembly memory
 *   WebAssembly code by Liftoff only             246, 248: no optimised copy of the hot functions
 *   both                                         130, 124
 *
 * CPU, each change alone beside PGlite as it starts, interleaved runs, the machine shared with other work:
 * - Liftoff only: +18 % CPU per delivery in PGlite (median 714 against 605 µs over three runs each of 12,000
 *   deliveries in transactions of 8); 65–75 MiB less after them. Raising V8's tiering budget tenfold or a hundredfold
 *   instead cost about as much CPU (692, 706 µs) and saved only 10–30 MiB.
 * - 16 MB of buffers: no difference beyond the noise, even for inserts at random keys into a 189 MB database's
 *   unique indexes (363–370 µs against 330–410 µs with 128 MB): what leaves the pool stays in the host's page cache.
 *   32 MB holds 17–20 MiB more.
 * Tried, not kept: maintenance_work_mem 16 MB instead of 64 (a vacuum of 400,000 dead rows grew neither).
 */

/** PostgreSQL's settings for the embedded database's memory, given after its durability settings. */
export const MEMORY_START_PARAMS = ['-c', 'shared_buffers=16MB'];

/**
 * Compiles WebAssembly with V8's baseline compiler only, from now on in this process: set before PGlite compiles
 * its module. A flag a later V8 drops is answered with a warning line, and the memory as before.
 */
export function compileWasmLightly(): void {
  setFlagsFromString('--liftoff-only');
}
