import { fork, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Cleanup } from './cleanup.ts';

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly pid: number;
  /** Resolves with the exit code (or the signal) once the process has gone. */
  readonly exited: Promise<string>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

function track(name: string, child: ChildProcess, cleanup: Cleanup): Child {
  // A program that is not installed fails with an 'error' event after this returns; the throw below says so.
  child.once('error', () => {});
  if (child.pid === undefined) throw new Error(`${name} did not start: is it installed and on the PATH?`);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ?? String(code)));
  });
  const stop = async (graceMs = 5000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const forget = cleanup.add(`stop ${name} (pid ${child.pid})`, () => stop());
  void exited.then(forget);
  return { name, process: child, pid: child.pid, exited, stop };
}

/** Resolved here, not from the working directory, so the bench can be started from anywhere. */
const TSX = import.meta.resolve('tsx');

/**
 * Runs one of the bench's TypeScript entry points in its own Node process with an IPC channel: the load
 * generator, servers and queue workers never share an event loop with what they measure.
 */
export function forkTs(name: string, file: URL, cleanup: Cleanup, env: Record<string, string> = {}): Child {
  const child = fork(file, [], {
    execArgv: ['--import', TSX],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return track(name, child, cleanup);
}

/** Runs a program (pgbench, the oncehook binary) with its output sent where `stdio` says. */
export function spawnProcess(
  name: string,
  command: string,
  args: string[],
  cleanup: Cleanup,
  options: { env?: Record<string, string | undefined>; cwd?: string; stdio?: StdioOptions } = {},
): Child {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: options.stdio ?? ['ignore', 'pipe', 'pipe'],
  });
  return track(name, child, cleanup);
}

/** The next IPC message the child sends that `accept` takes; rejects if the child exits first. */
export function nextMessage<T>(child: Child, accept: (message: unknown) => message is T): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (!accept(message)) return;
      off();
      resolve(message);
    };
    const onExit = (code: number | null, signal: string | null) => {
      off();
      reject(new Error(`${child.name} exited (${signal ?? code}) before answering`));
    };
    const off = () => {
      child.process.off('message', onMessage);
      child.process.off('exit', onExit);
    };
    child.process.on('message', onMessage);
    child.process.once('exit', onExit);
  });
}

/** For a forked child's own side: exit when the bench that started it goes away, even if it was killed. */
export function exitWithParent(): void {
  process.once('disconnect', () => process.exit(0));
}
