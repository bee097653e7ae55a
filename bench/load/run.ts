import { forkTs, nextMessage } from '../children.ts';
import type { Cleanup } from '../cleanup.ts';
import { CpuWatch, type CpuShares } from '../proc.ts';
import type { LoadMessage, LoadResult, LoadSpec } from './protocol.ts';

const GENERATOR = new URL('./generator.ts', import.meta.url);

export type Progress = Extract<LoadMessage, { type: 'progress' }>;

export interface LoadHooks {
  onProgress?(progress: Progress): void;
  /** The measured window opened or closed (warm-up excluded). */
  onWindow?(edge: 'start' | 'end'): void;
}

/** Runs one load in a fresh generator process and returns its figures; progress lines arrive as they are measured. */
export async function runLoad(spec: LoadSpec, cleanup: Cleanup, hooks: LoadHooks = {}): Promise<LoadResult> {
  const generator = forkTs(`load generator (${spec.label})`, GENERATOR, cleanup);
  const listener = (message: unknown) => {
    const m = message as LoadMessage;
    if (m.type === 'progress') hooks.onProgress?.(m);
    if (m.type === 'window') hooks.onWindow?.(m.edge);
  };
  generator.process.on('message', listener);
  try {
    generator.process.send(spec);
    const answer = await nextMessage(
      generator,
      (m): m is Extract<LoadMessage, { type: 'done' | 'failed' }> => ['done', 'failed'].includes((m as LoadMessage).type),
    );
    if (answer.type === 'failed') throw new Error(`the load generator failed: ${answer.message}`);
    return answer.result;
  } finally {
    generator.process.off('message', listener);
    await generator.stop();
  }
}

/** A load whose measured window also times the CPU of `pids` (and of PostgreSQL and the machine). */
export async function watchedLoad(
  spec: LoadSpec,
  cleanup: Cleanup,
  pids: Record<string, number>,
  hooks: Pick<LoadHooks, 'onProgress'> = {},
): Promise<{ load: LoadResult; cpu: CpuShares | null }> {
  const watch = new CpuWatch(pids);
  let cpu: CpuShares | null = null;
  const load = await runLoad(spec, cleanup, { ...hooks, onWindow: (edge) => (edge === 'start' ? watch.start() : (cpu = watch.stop())) });
  return { load, cpu };
}
