import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, ADMIN_TOKEN, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/** Lookup origins as a person sees them: listed with the actions whose lookups they answer. */
const API = 'http://127.0.0.1:9';
const SEARCH = 'http://127.0.0.1:10';
const MAIL = 'http://127.0.0.1:11';
const config = shopConfig({
  crm: { url: `${API}/crm`, lookup: `${SEARCH}/crm?key={key}`, maxAttempts: 3 },
  keyed: { url: `${API}/keyed`, idempotency: 'key', keyRetention: '1h', lookup: { url: `${SEARCH}/keyed?key={key}`, found: { id: { $exist: true } } }, maxAttempts: 3 },
  mail: { url: `${MAIL}/mail` },
});

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;
/** Unknown outcomes by what their next claim would be, with the search origin open. */
let task: { asks: string; keyedAsks: string; resends: string; spent: string };

/** Sets an unknown outcome's counts and times directly: the web role forwards nothing, so they stay as set. */
async function unknownOutcome(id: string, { attempts, lookups, firstAttemptAgo }: { attempts: number; lookups: number; firstAttemptAgo: string }) {
  await gateway.store.db.execute(
    sql`update tasks set state = 'outcome_unknown', attempts = ${attempts}, lookups = ${lookups}, last_error = 'timed out',
          first_attempt_at = now() - ${firstAttemptAgo}::interval, next_attempt_at = now() - interval '1 second' where id = ${id}`,
  );
}

beforeAll(async () => {
  gateway = await startTestGateway(config, { role: 'web', adminToken: ADMIN_TOKEN });
  api = adminApi(gateway.url);
  const tasksOf = async (eventId: string) => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId }));
    return Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id])) as Record<'crm' | 'keyed' | 'mail', string>;
  };
  const [first, second] = [await tasksOf('lookup-origin-1'), await tasksOf('lookup-origin-2')];
  task = { asks: first.crm, keyedAsks: first.keyed, resends: second.keyed, spent: second.crm };
  await unknownOutcome(task.asks, { attempts: 1, lookups: 1, firstAttemptAgo: '1 minute' });
  // Keyed, but its first attempt is older than the downstream keeps keys: its claim asks the lookup.
  await unknownOutcome(task.keyedAsks, { attempts: 1, lookups: 0, firstAttemptAgo: '2 hours' });
  // Keyed, attempts left, the key still kept: its claim is a resend to the action's own origin.
  await unknownOutcome(task.resends, { attempts: 1, lookups: 0, firstAttemptAgo: '1 minute' });
  // Its lookups spent: its claim sends it to review.
  await unknownOutcome(task.spent, { attempts: 1, lookups: 3, firstAttemptAgo: '1 minute' });
});
afterAll(async () => {
  await gateway?.close();
});

type Listed = { origin: string; status: string; actions: string[]; lookups: string[]; waiting: number; waitingLookups: number };
const listed = async (origin: string): Promise<Listed | undefined> => (await api('/api/destinations')).json.items.find((d: Listed) => d.origin === origin);

describe('GET /api/destinations and a lookup origin', () => {
  it('lists it before it ever answered, with the actions whose lookups it answers and the lookups due there', async () => {
    expect(await listed(SEARCH)).toMatchObject({ status: 'open', actions: [], lookups: ['shop/crm', 'shop/keyed'], waiting: 0, waitingLookups: 2 });
    expect(await listed(API)).toMatchObject({ actions: ['shop/crm', 'shop/keyed'], lookups: [], waiting: 4, waitingLookups: 0 });
    expect(await listed(MAIL)).toMatchObject({ actions: ['shop/mail'], lookups: [], waitingLookups: 0 });
    const page = await signedInDashboard(gateway.url)('/ui/destinations');
    expect(page).toContain('shop/crm (lookup), shop/keyed (lookup)');
    expect(page).toContain('<span class="muted"> + 2 lookups</span>');
  });
});
