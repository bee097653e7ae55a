import { setFlagsFromString } from 'node:v8';

/*
 * Where the embedded database's memory goes, and what is kept. PostgreSQL fills its buffer pool in WebAssembly
 * memory, and V8 keeps an optimised copy of PGlite's hot functions beside the baseline code: 16 MB of buffers and
 * baseline code only held PGlite alone to about 40 % of its resident memory as shipped. The smaller pool cost no
 * time measured (what leaves it stays in the host's page cache); baseline code costs PGlite's statements some
 * CPU, none seen in the whole gateway under load. The figures: docs/performance-history.md.
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
