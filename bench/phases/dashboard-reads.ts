/**
 * How long the dashboard's home takes to answer a signed-in person, and `/api/stats`: the page over the last hour
 * (where `/ui` sends one) and over the last day. The first read of each after the gateway started, which counts the
 * history its tallies then keep by increments, and the median and longest of the reads after it.
 */

/** The reads timed, in the order a person opening the dashboard makes them. */
const READS = ['/ui/home', '/ui/home?range=day', '/api/stats'] as const;
const REPEATS = 5;

export interface DashboardRead {
  path: string;
  firstMs: number;
  medianMs: number;
  maxMs: number;
}

const cookieOf = (response: Response, name: string) =>
  response.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith(`${name}=`));

/** Signs in through the dashboard's own form, as a browser does: its nonce cookie, then the token. */
async function signIn(origin: string, token: string): Promise<string> {
  const form = await fetch(`${origin}/ui/login`);
  const nonce = cookieOf(form, 'oncehook_login');
  const field = /name="_login" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!nonce || !field) throw new Error('the sign-in form gave no nonce');
  const answer = await fetch(`${origin}/ui/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: nonce, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _login: field, next: '/ui/home', token }),
  });
  const session = cookieOf(answer, 'oncehook_session');
  if (answer.status !== 303 || !session) throw new Error(`signing in was answered ${answer.status}`);
  return session;
}

async function timed(origin: string, path: string, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${origin}${path}`, { headers });
  await response.arrayBuffer();
  const ms = performance.now() - started;
  if (!response.ok) throw new Error(`${path} was answered ${response.status}`);
  return ms;
}

/** Each read's first time and, over REPEATS more, its median and longest, in ms. */
export async function timeDashboard(origin: string, token: string): Promise<DashboardRead[]> {
  const session = await signIn(origin, token);
  const headers = (path: string): Record<string, string> => (path.startsWith('/api/') ? { authorization: `Bearer ${token}` } : { cookie: session });
  const first = new Map<string, number>();
  for (const path of READS) first.set(path, await timed(origin, path, headers(path)));
  const later = new Map<string, number[]>(READS.map((path) => [path, []]));
  for (let i = 0; i < REPEATS; i++) for (const path of READS) later.get(path)!.push(await timed(origin, path, headers(path)));
  return READS.map((path) => {
    const sorted = later.get(path)!.sort((a, b) => a - b);
    return { path, firstMs: first.get(path)!, medianMs: sorted[Math.floor(sorted.length / 2)]!, maxMs: sorted[sorted.length - 1]! };
  });
}
