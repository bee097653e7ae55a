import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Where the installed PGlite keeps its WebAssembly and its file bundle. */
const dist = () => dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));

let compiled: Promise<WebAssembly.Module> | undefined;
let bundle: Promise<Blob> | undefined;

/** A failed read or compile is not kept: the next store tries again. */
function once<T>(made: Promise<T>, forget: () => void): Promise<T> {
  made.catch(forget);
  return made;
}

/**
 * PGlite's WebAssembly, compiled once in a process. PGlite compiles its 9 MB module for every database it opens;
 * the test suites open hundreds, each paying the compile again and V8's optimisation of the same hot functions.
 * A module compiled in a process that later asks for baseline code only (pglite-memory.ts) keeps what it has.
 */
export function compiledPglite(): Promise<WebAssembly.Module> {
  compiled ??= once(
    readFile(join(dist(), 'pglite.wasm')).then((bytes) => WebAssembly.compile(bytes)),
    () => (compiled = undefined),
  );
  return compiled;
}

/** PGlite's file bundle (its share/ and lib/), read once in a process: for the in-memory databases tests open. */
export function pgliteBundle(): Promise<Blob> {
  bundle ??= once(
    readFile(join(dist(), 'pglite.data')).then((bytes) => new Blob([bytes])),
    () => (bundle = undefined),
  );
  return bundle;
}
