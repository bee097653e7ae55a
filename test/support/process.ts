import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** `npm start`'s launcher: the TypeScript sources through tsx, as a checkout runs them. */
export const LAUNCHER = fileURLToPath(new URL('../../bin/oncehook.js', import.meta.url));
/** Where the global setup built this checkout for the run (test/support/build-once.ts). */
export const BUILT_CHECKOUT_ENV = 'ONCEHOOK_TEST_BUILT_CHECKOUT';
const built = process.env[BUILT_CHECKOUT_ENV];
/** The `oncehook` the tests run: the run's compiled build where there is one, else the launcher. */
export const BIN = built ? join(built, 'dist', 'src', 'cli', 'main.js') : LAUNCHER;

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** SIGTERM, and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL: no shutdown code runs, exactly like a crash. */
  kill(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Which `oncehook` runs, and where: this checkout's by default, or another copy (a production install in a temp directory). */
export interface Placement {
  /** The working directory (default: this checkout): where `./oncehook.config.json` and `./.oncehook` are found. */
  cwd?: string;
  /** The `bin/oncehook.js` to run (default: this checkout's, whatever `cwd` is). */
  bin?: string;
}

/** `bin/oncehook.js` of an installed copy of oncehook in `dir`. */
export function binIn(dir: string): string {
  return join(dir, 'bin', 'oncehook.js');
}

/** Starts `oncehook serve` as a real process on a free port and waits until it listens. */
export async function spawnGateway(
  options: { args?: string[]; env?: Record<string, string | undefined>; startTimeoutMs?: number } & Placement = {},
): Promise<GatewayProcess> {
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...process.env, LOG_LEVEL: 'info', ...options.env })) {
    if (value !== undefined) env[key] = value;
  }
  const child = spawn(process.execPath, [options.bin ?? BIN, 'serve', '--port', '0', '--host', '127.0.0.1', ...(options.args ?? [])], {
    cwd: options.cwd ?? REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // However the test ends, its gateways end with it: one left running takes CPU from every later test and bench.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // a gateway that never said it listens must not outlive the test
      reject(new Error(`gateway did not start within ${startTimeoutMs / 1000} s:\n${output}`));
    }, startTimeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      await exited(child);
    },
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
  };
}

/** Runs `command` to completion, with what it printed. */
export function runProcess(
  command: string,
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd ?? REPO, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // 'close', not 'exit': the process may exit before its last output has been read from the pipes.
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Runs the real `oncehook` binary to completion. */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  placement: Placement = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runProcess(process.execPath, [placement.bin ?? BIN, ...args], { env, ...(placement.cwd ? { cwd: placement.cwd } : {}) });
}

/** How a process ended: its exit code, or the signal that ended it. */
export function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}
