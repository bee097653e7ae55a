import { sql } from 'drizzle-orm';
import { AdminTokens } from '../../src/http/tokens.ts';
import type { Db } from '../../src/store/connect.ts';
import { SESSION_COOKIE, signSession } from '../../src/ui/session.ts';

export const ADMIN_TOKEN = 'admin-test-token';
/** Two more people, so tests can see which label a decision was recorded under. */
export const PEOPLE = { alice: 'alice-test-token', bob: 'bob-test-token' } as const;
export const ALL_TOKENS = { admin: ADMIN_TOKEN, ...PEOPLE };

export interface ApiAnswer {
  status: number;
  headers: Headers;
  json: any;
}

/** Calls the admin API of the gateway at `baseUrl`; `token: null` sends no Authorization header. */
export function adminApi(baseUrl: string, defaultToken: string = ADMIN_TOKEN) {
  return async (path: string, init: { method?: string; body?: unknown; token?: string | null } = {}): Promise<ApiAnswer> => {
    const headers = new Headers();
    const token = init.token === undefined ? defaultToken : init.token;
    if (token !== null) headers.set('authorization', `Bearer ${token}`);
    if (init.body !== undefined) headers.set('content-type', 'application/json');
    const response = await fetch(`${baseUrl}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers,
      body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : null };
  };
}

/**
 * Reads dashboard pages of the gateway at `baseUrl` as the admin, signed in: the page's HTML, or a failure when it
 * is answered with another status than `status`. `token`: the admin token that gateway was started with.
 */
export function signedInDashboard(baseUrl: string, token: string = ADMIN_TOKEN) {
  const cookie = `${SESSION_COOKIE}=${signSession(new AdminTokens(token), 'admin')}`;
  return async (path: string, status = 200): Promise<string> => {
    const response = await fetch(`${baseUrl}${path}`, { headers: { cookie } });
    if (response.status !== status) throw new Error(`${path} answered ${response.status}`);
    return response.text();
  };
}

/** Every page of a cursor-paged list from `cursor` until none is ready, following nextCursor. */
export async function followPages(
  api: ReturnType<typeof adminApi>,
  path: string,
  cursor: string | null = null,
): Promise<{ seen: string[]; cursor: string | null }> {
  const seen: string[] = [];
  for (;;) {
    const page = await api(`${path}${cursor ? `&cursor=${cursor}` : ''}`);
    if (page.status !== 200) throw new Error(`${path} answered ${page.status}`);
    seen.push(...page.json.items.map((item: { id: string }) => item.id));
    cursor = page.json.nextCursor;
    if (!page.json.hasMore) return { seen, cursor };
  }
}

/** Puts a task in a state directly, as the forwarder would have: for testing what a person may do from it. */
export async function setState(db: Db, taskId: string, state: string): Promise<void> {
  await db.execute(sql`update tasks set state = ${state}, last_error = ${state === 'succeeded' ? null : `set by the test: ${state}`} where id = ${taskId}`);
}
