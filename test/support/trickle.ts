import { fork } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export interface Trickle {
  /** Connections opened so far, the first ones included. */
  readonly opened: number;
  /** Answers the gateway gave, by status (a connection closed with no answer counts as 0). */
  readonly answers: ReadonlyMap<number, number>;
  /** Stops sending and reconnecting, and closes every socket. */
  stop(): void;
}

/**
 * `sockets` connections to `POST /in/{source}`, each declaring a body of `declaredBytes` and then sending one byte
 * every `everyMs`, unsigned: a slowloris anyone who knows the URL can run. A connection the gateway answers or
 * closes is opened again after about `reconnectMs` (half to one and a half times it, so they do not all come back
 * together), as an attacker would.
 */
export function trickle(
  baseUrl: string,
  source: string,
  { sockets, declaredBytes = 100_000, everyMs = 2000, reconnectMs = 1000 }: { sockets: number; declaredBytes?: number; everyMs?: number; reconnectMs?: number },
): Trickle {
  const { port } = new URL(baseUrl);
  const open = new Set<net.Socket>();
  const answers = new Map<number, number>();
  let opened = 0;
  let stopped = false;
  const connect = () => {
    if (stopped) return;
    opened++;
    const socket = net.connect(Number(port), '127.0.0.1');
    open.add(socket);
    socket.write(`POST /in/${source} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declaredBytes}\r\n\r\n{`);
    const drip = setInterval(() => socket.write(' '), everyMs);
    let head = '';
    socket.on('data', (chunk) => {
      if (head.length < 12) head += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(drip);
      open.delete(socket);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1];
      answers.set(Number(status ?? 0), (answers.get(Number(status ?? 0)) ?? 0) + 1);
      if (!stopped) setTimeout(connect, reconnectMs * (0.5 + Math.random()));
    });
  };
  for (let i = 0; i < sockets; i++) connect();
  return {
    get opened() {
      return opened;
    },
    answers,
    stop() {
      stopped = true;
      for (const socket of open) socket.destroy();
    },
  };
}

export interface Tally {
  opened: number;
  answers: Map<number, number>;
}

/**
 * `trickle` from a process of its own, as an attacker runs it: its sockets' work is not done on the event loop of
 * the gateway under test. Resolves once it started; `stop` resolves with what it saw.
 */
export async function trickleElsewhere(baseUrl: string, source: string, options: Parameters<typeof trickle>[2]): Promise<{ stop(): Promise<Tally> }> {
  const child = fork(fileURLToPath(import.meta.url), [JSON.stringify({ baseUrl, source, options })], {
    execArgv: ['--import', 'tsx'],
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
  });
  await new Promise((resolve, reject) => child.once('message', resolve).once('exit', () => reject(new Error('the trickling process exited'))));
  return {
    stop: () =>
      new Promise<Tally>((resolve) => {
        child.once('message', (tally) => {
          const { opened, answers } = tally as { opened: number; answers: [number, number][] };
          resolve({ opened, answers: new Map(answers) });
        });
        child.send('stop');
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  const { baseUrl, source, options } = JSON.parse(process.argv[2]!);
  const running = trickle(baseUrl, source, options);
  process.send('started');
  // A test that failed before stopping it leaves no attacker behind.
  process.once('disconnect', () => process.exit(0));
  process.once('message', () => {
    running.stop();
    process.send!({ opened: running.opened, answers: [...running.answers] }, () => process.exit(0));
  });
}
