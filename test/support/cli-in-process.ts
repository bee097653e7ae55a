import { addAdminCommands } from '../../src/cli/admin.ts';
import { oncehookProgram } from '../../src/cli/program.ts';

/** How a command given to `runAdminInProcess` ended: as `runCli` answers for the process. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** The stand-in for process.exit: ends the command's parse, carrying its code. */
class Exited extends Error {
  constructor(readonly code: number) {
    super(`exited with ${code}`);
  }
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs an admin command as `oncehook` would, in this process: the program's own settings and commands, its output
 * and exit code captured, `env` in the environment for its options to read. A process start for each (~0.25 s of
 * CPU) was most of the admin commands' unit tests; `runCli` still runs the binary where the process is the point.
 * Commands given at once run one after another, as the environment and the exit code are the process's.
 */
export function runAdminInProcess(args: string[], env: Record<string, string>): Promise<Ran> {
  const ran = queue.then(() => runOne(args, env));
  queue = ran.catch(() => {});
  return ran;
}

async function runOne(args: string[], env: Record<string, string>): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const program = oncehookProgram((code) => {
    throw new Exited(code);
  }).configureOutput({ writeOut: (text) => (stdout += text), writeErr: (text) => (stderr += text) });
  addAdminCommands(program);
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  const exitCode = process.exitCode;
  Object.assign(process.env, env);
  process.exitCode = undefined;
  try {
    await program.parseAsync(args, { from: 'user' });
    return { code: Number(process.exitCode ?? 0), stdout, stderr };
  } catch (error) {
    if (!(error instanceof Exited)) throw error;
    return { code: error.code, stdout, stderr };
  } finally {
    process.exitCode = exitCode;
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}
