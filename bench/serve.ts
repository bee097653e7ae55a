import { spawn } from 'node:child_process';

export interface Served {
  /** Where it listens, from its own "listening on" line. */
  url: string;
  pid: number;
  /** SIGTERM, and resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * `oncehook serve` on a free port of 127.0.0.1, run from `script` (the build, bin/oncehook.js or an installed copy),
 * resolved once it says where it listens: the database opened and migrated. Rejects with what it wrote if it exits
 * first.
 */
export async function serveOncehook(script: string, config: string, options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<Served> {
  const child = spawn(process.execPath, [script, 'serve', '--port', '0', '--host', '127.0.0.1', '--config', config], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the gateway exited with ${code}:\n${output}`)));
  });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return { url, pid: child.pid!, stop };
}
