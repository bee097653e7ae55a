import { totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_NEEDS_BYTES, memoryLimit, memoryShortfall } from '../../../src/store/memory-need.ts';

const MiB = 1024 * 1024;

describe('the memory the embedded default needs', () => {
  it('reads the limit this process has: the machine, or a container below it', () => {
    const limit = memoryLimit();
    expect(limit).toBeGreaterThan(0);
    expect(limit).toBeLessThanOrEqual(totalmem());
  });

  it('warns, in one line saying what to do, where there is less than it needs', () => {
    expect(memoryShortfall(256 * MiB)).toBe(
      `only 256 MiB of memory here, and the embedded database needs about ${EMBEDDED_NEEDS_BYTES / MiB} MiB: ` +
        'it may be killed for want of memory. Give it more, or set DATABASE_URL to use PostgreSQL',
    );
    expect(memoryShortfall(EMBEDDED_NEEDS_BYTES - 1)).toMatch(/^only \d+ MiB/);
  });

  it('says nothing where there is enough', () => {
    expect(memoryShortfall(EMBEDDED_NEEDS_BYTES)).toBeNull();
    expect(memoryShortfall(16 * 1024 * MiB)).toBeNull();
  });
});
