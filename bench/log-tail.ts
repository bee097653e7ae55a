import { closeSync, openSync, readSync } from 'node:fs';

/**
 * Reads a growing log file from where the last read stopped, one complete line at a time: a soak's gateway
 * log reaches hundreds of megabytes, and reading it whole at every progress line would cost more than the
 * gateway it watches.
 */
export class LogTail {
  #offset = 0;
  #partial = '';

  constructor(private readonly file: string) {}

  /** The lines completed since the previous call. */
  read(): string[] {
    const fd = openSync(this.file, 'r');
    try {
      const buffer = Buffer.alloc(1 << 20);
      let text = this.#partial;
      for (;;) {
        const n = readSync(fd, buffer, 0, buffer.length, this.#offset);
        if (n === 0) break;
        this.#offset += n;
        text += buffer.toString('utf8', 0, n);
      }
      const lines = text.split('\n');
      this.#partial = lines.pop()!;
      return lines;
    } finally {
      closeSync(fd);
    }
  }
}
