import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pacer } from '../../bench/load/pace.ts';
import { LogTail } from '../../bench/log-tail.ts';

describe('bench load pacing', () => {
  it('hands out due times at the rate, whichever client asks, and none at or past the end', () => {
    const due = pacer(1000, 250, 1020);
    expect([due(), due(), due(), due(), due(), due()]).toEqual([1000, 1004, 1008, 1012, 1016, null]);
    expect(due()).toBeNull();
  });
});

describe('bench log tail', () => {
  it('returns each complete line once, holding a line still being written until it ends', () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-tail-'));
    try {
      const file = join(dir, 'gateway.log');
      writeFileSync(file, '');
      const tail = new LogTail(file);
      expect(tail.read()).toEqual([]);
      appendFileSync(file, '{"a":1}\n{"b":');
      expect(tail.read()).toEqual(['{"a":1}']);
      appendFileSync(file, '2}\n{"c":3}\n');
      expect(tail.read()).toEqual(['{"b":2}', '{"c":3}']);
      expect(tail.read()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
