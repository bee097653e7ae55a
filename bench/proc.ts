/**
 * What the kernel says about a process and the machine (Linux /proc). CPU shares tell where the time went
 * on a two-core machine: a process near 100 % is bound by its one JavaScript thread.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Kernel clock ticks per second (`getconf CLK_TCK`): 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;

function status(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
}

function kib(text: string | null, field: string): number | null {
  const match = text && new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match ? Number(match[1]) * 1024 : null;
}

/** Resident memory now and its high-water mark since the process started, in bytes. */
export function memoryOf(pid: number): { rss: number | null; peak: number | null } {
  const text = status(pid);
  return { rss: kib(text, 'VmRSS'), peak: kib(text, 'VmHWM') };
}

/** CPU seconds (user + system) a process has used. */
export function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses; the fields after the last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Busy and total CPU seconds of the whole machine, all cores summed. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy: busy / TICKS_PER_SECOND, total: (busy + idle! + iowait!) / TICKS_PER_SECOND };
}

/**
 * How busy the machine is with nothing of the bench running, over `ms`. Anything here takes CPU from every
 * phase: a process left over from another run lowers all figures, and the ratios less than the absolutes.
 */
export async function idleBusyShare(ms = 1000): Promise<number> {
  const watch = new CpuWatch({});
  watch.start();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return watch.stop().machine;
}

/** PIDs of the PostgreSQL server's processes (backends, WAL writer, checkpointer…), found by their name. */
export function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSafe('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function readdirSafe(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

export interface CpuShares {
  /** Share of one core each watched process used over the window (1.0 = one core busy throughout). */
  processes: Record<string, number>;
  /** Share of one core all PostgreSQL processes used together. */
  postgres: number;
  /** Share of the whole machine (all cores) that was busy. */
  machine: number;
  cores: number;
}

/**
 * Watches CPU use over a window: `start()` when the measured load begins, `stop()` when it ends. Postgres
 * backends come and go, so their CPU is summed over the processes alive at both ends.
 */
export class CpuWatch {
  #from: { at: number; machine: { busy: number; total: number }; procs: Map<string, number>; pg: Map<number, number> } | null = null;

  constructor(private readonly pids: Record<string, number>) {}

  start(): void {
    this.#from = { at: performance.now(), machine: machineCpu(), procs: this.#procs(), pg: this.#pg() };
  }

  stop(): CpuShares {
    const from = this.#from!;
    const seconds = (performance.now() - from.at) / 1000;
    const machine = machineCpu();
    const processes: Record<string, number> = {};
    for (const [name, cpu] of this.#procs()) processes[name] = (cpu - (from.procs.get(name) ?? cpu)) / seconds;
    let pg = 0;
    for (const [pid, cpu] of this.#pg()) pg += cpu - (from.pg.get(pid) ?? 0);
    return {
      processes,
      postgres: pg / seconds,
      machine: (machine.busy - from.machine.busy) / (machine.total - from.machine.total),
      cores: availableParallelism(),
    };
  }

  #procs(): Map<string, number> {
    const map = new Map<string, number>();
    for (const [name, pid] of Object.entries(this.pids)) {
      const cpu = cpuSecondsOf(pid);
      if (cpu !== null) map.set(name, cpu);
    }
    return map;
  }

  #pg(): Map<number, number> {
    const map = new Map<number, number>();
    for (const pid of postgresPids()) {
      const cpu = cpuSecondsOf(pid);
      if (cpu !== null) map.set(pid, cpu);
    }
    return map;
  }
}

/** Samples a process's resident memory every `everyMs` until stopped. */
export class RssSampler {
  readonly samples: Array<{ atSeconds: number; rssBytes: number }> = [];
  readonly #timer: NodeJS.Timeout;
  readonly #started = performance.now();

  constructor(
    private readonly pid: number,
    everyMs: number,
  ) {
    this.#timer = setInterval(() => this.sample(), everyMs);
    this.sample();
  }

  sample(): void {
    const { rss } = memoryOf(this.pid);
    if (rss !== null) this.samples.push({ atSeconds: (performance.now() - this.#started) / 1000, rssBytes: rss });
  }

  /** Stops sampling; returns the high-water mark the kernel kept, which catches peaks between samples. */
  stop(): number | null {
    clearInterval(this.#timer);
    this.sample();
    const { peak } = memoryOf(this.pid);
    const sampled = Math.max(0, ...this.samples.map((s) => s.rssBytes));
    return peak ?? (sampled || null);
  }
}
