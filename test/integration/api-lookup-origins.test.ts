import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Routes } from '../../src/forward/routes.ts';
import { claimTasks } from '../../src/store/atomic/claim.ts';
import { destinations } from '../../src/store/schema.ts';
import { adminApi, ADMIN_TOKEN, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/**
 * Lookup origins as a person sees them: listed with the actions whose lookups they answer, and, once paused, named
 * as what holds an unknown outcome whose next claim would ask them — by the claim's own rule
 * (oncehook_unknown_outcome_mode).
 */
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

describe('the attention queue and a paused lookup origin', () => {
  it('says an unknown outcome whose claim would ask the lookup is held there, with the reason, in the list and on its page, as the claim holds it', async () => {
    await gateway.store.db.insert(destinations).values({ origin: SEARCH, pausedAt: new Date(), pausedReason: "401 refused oncehook's lookup" });
    const queue = await api('/api/tasks?attention=true');
    const held = Object.fromEntries(queue.json.items.map((t: { id: string; heldBy: string | null; heldFor: string | null; heldReason: string | null }) => [t.id, [t.heldBy, t.heldFor, t.heldReason]]));
    const lookupHeld = [SEARCH, 'lookup', "401 refused oncehook's lookup"];
    expect(held).toEqual({ [task.asks]: lookupHeld, [task.keyedAsks]: lookupHeld, [task.resends]: [null, null, null], [task.spent]: [null, null, null] });

    const page = await signedInDashboard(gateway.url)('/ui/attention');
    expect(page.match(/held: lookups at http:\/\/127\.0\.0\.1:10 are paused \(401 refused oncehook&#39;s lookup\); <a href="\/ui\/destinations">resume it<\/a>/g)).toHaveLength(2);

    const one = (await api(`/api/tasks/${task.asks}`)).json;
    expect(one.summary).toContain(`; held: lookups at ${SEARCH} are paused`);
    expect(one.nextDecision).toMatch(/^No lookup is asked at http:\/\/127\.0\.0\.1:10 while it is paused \(since .*: 401 refused oncehook's lookup\)\. Fix the cause, then resume the destination \(oncehook resume /);
    expect(await signedInDashboard(gateway.url)(`/ui/tasks/${task.asks}`)).toContain(`held: lookups at ${SEARCH} are paused`);
    const resend = (await api(`/api/tasks/${task.resends}`)).json;
    expect(resend.summary).not.toContain('held');
    expect(resend.nextDecision).toMatch(/^oncehook is reconciling it/);

    // The claim itself takes exactly the tasks said not to be held: the resend and the one going to review.
    const routes = new Routes(parseConfig(JSON.stringify(config), 'test config').config, 1000).forClaim;
    const claimed = await claimTasks(gateway.store.db, { owner: 'test', routes, limit: 10 });
    const unknowns = claimed.tasks.filter((t) => t.priorState === 'outcome_unknown');
    expect(unknowns.map((t) => [t.id, t.mode]).sort()).toEqual([[task.resends, 'send'], [task.spent, 'review']].sort());
  });
});
