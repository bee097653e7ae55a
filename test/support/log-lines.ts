import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.ts';

/** A logger writing into a list of parsed lines. */
export function capture(level = 'info') {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger(level, stream), lines };
}
