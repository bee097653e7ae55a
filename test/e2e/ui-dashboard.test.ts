import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi } from '../support/admin.ts';
import { launchChromium } from '../support/browser.ts';
import { post, shopifyDelivery } from '../support/deliveries.ts';
import { waitFor } from '../support/forwarding.ts';
import { startHeldTaskRig, type HeldTaskRig } from '../support/held-task.ts';

const TOKENS = { alice: 'alice-ui-token', bob: 'bob-ui-token' };
const OWNER = 'christina.vandenberghe-oosterhuis@operations.example.com';
const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;
let rig: HeldTaskRig;
let browser: Browser;
let page: Page;
let held: string;
let url: string;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  const [started, launched] = await Promise.allSettled([
    startHeldTaskRig(TOKENS),
    launchChromium(),
  ]);
  // Whichever started is kept for afterAll to stop, even when the other failed (a browser that would not start, say).
  if (started.status === 'fulfilled') rig = started.value;
  if (launched.status === 'fulfilled') browser = launched.value;
  for (const outcome of [started, launched]) if (outcome.status === 'rejected') throw outcome.reason;
  url = rig.gateway.url;
  const api = adminApi(url, TOKENS.bob);
  // Three tasks a person must settle (the downstream hangs, no key, no lookup), one that simply succeeds, one retried delivery.
  const answers = await Promise.all(
    ['ui-order-1001', 'ui-order-1002', 'ui-order-1003'].map((eventId) => post(url, 'shop', shopifyDelivery({ eventId, topic: 'orders/hang' }))),
  );
  held = answers[0]!.json.tasks[0].id;
  const ok = shopifyDelivery({ eventId: 'ui-order-2001', topic: 'orders/create' });
  await post(url, 'shop', ok);
  await post(url, 'shop', ok);
  await waitFor(async () => (await api('/api/tasks?state=needs_review')).json.items.length === 3, 20_000);
  // A long owner, as people type them: the queue must still fit the window.
  await api(`/api/tasks/${answers[1]!.json.tasks[0].id}/assign`, { body: { owner: OWNER, note: 'looking in the CRM' } });
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await rig?.close();
});

describe('the dashboard in a real browser', () => {
  it('is unreachable without a session: pages redirect to the login, a POST too', async () => {
    const get = await fetch(`${url}/ui/attention`, { redirect: 'manual' });
    expect(get.status).toBe(303);
    expect(get.headers.get('location')).toBe('/ui/login?next=%2Fui%2Fattention');
    const decide = await fetch(`${url}/ui/tasks/${held}/resolve`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ note: 'x', reference: 'y' }) });
    expect(decide.status).toBe(303);
    expect(decide.headers.get('location')).toBe('/ui/login');
  });

  it('logs in with the token into an HttpOnly, SameSite=Strict cookie that is not the token', async () => {
    await page.goto(`${url}/ui/attention`);
    expect(new URL(page.url()).pathname).toBe('/ui/login');
    await page.screenshot({ path: `${ARTIFACTS}ui-login.png` });
    await page.fill('input[name=token]', 'not-a-token');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('.flash.error').textContent()).toMatch(/not an admin token/);

    await page.fill('input[name=token]', TOKENS.alice);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/ui/attention`);
    const [session] = (await page.context().cookies()).filter((cookie) => cookie.name === 'oncehook_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/ui', secure: false });
    expect(session!.value).not.toContain(TOKENS.alice);
    await expect.poll(() => page.locator('header .who').textContent()).toMatch(/signed in as alice/);
  });

  it('refuses a POST without the CSRF token, or with a wrong one (403), and changes nothing', async () => {
    const without = await page.request.post(`${url}/ui/tasks/${held}/cancel`, { form: { note: 'forged' }, maxRedirects: 0 });
    expect(without.status()).toBe(403);
    const wrong = await page.request.post(`${url}/ui/tasks/${held}/cancel`, { form: { note: 'forged', _csrf: 'A'.repeat(43) }, maxRedirects: 0 });
    expect(wrong.status()).toBe(403);
    const task = await adminApi(url, TOKENS.bob)(`/api/tasks/${held}`);
    expect(task.json.state).toBe('needs_review');
  });

  // At 1280–1920 px the queue was wider than the page: a person scrolled sideways to reach a row's decisions.
  it('fits the attention queue in a 1280 px window, the full IDs still in reach', async () => {
    const narrow = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await narrow.context().addCookies(await page.context().cookies());
      await narrow.goto(`${url}/ui/attention`);
      expect(await narrow.locator('tbody tr').count()).toBe(3);
      const widths = await narrow.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        window: window.innerWidth,
        table: Math.max(...[...document.querySelectorAll('.panel')].map((panel) => panel.scrollWidth - panel.clientWidth)),
      }));
      await narrow.screenshot({ path: `${ARTIFACTS}ui-attention-1280.png`, fullPage: true });
      expect(widths.page).toBeLessThanOrEqual(widths.window);
      expect(widths.table).toBe(0);
      const row = narrow.locator(`tr[id="${held}"]`);
      expect(await row.locator('code.id').first().getAttribute('title')).toBe(held);
      expect(await row.locator(`a[href="/ui/tasks/${held}"]`).count()).toBeGreaterThan(0);
      expect(await narrow.locator('.owner').getAttribute('title')).toBe(OWNER);
    } finally {
      await narrow.close();
    }
  });

  it('finds the needs_review task in the queue, resolves it with a reference and a note, and sees it succeeded', async () => {
    await page.goto(`${url}/ui/attention`);
    const row = page.locator(`tr[id="${held}"]`);
    await expect.poll(() => row.locator('.badge').textContent()).toBe('needs review');
    expect(await page.locator('tbody tr').count()).toBe(3);
    await page.screenshot({ path: `${ARTIFACTS}ui-attention.png`, fullPage: true });

    // A refusal is a clear message, not a stack: resolve without a reference.
    await row.locator('input[name=note]').fill('checked the CRM');
    await row.locator('button', { hasText: 'Resolve' }).click();
    await expect.poll(() => page.locator('.flash.error').textContent()).toMatch(/reference of the effect/);

    await row.locator('input[name=note]').fill('found the order in the CRM by hand');
    await row.locator('input[name=reference]').fill('CRM-4711');
    await row.locator('button', { hasText: 'Resolve' }).click();
    await expect.poll(() => page.locator('.flash.ok').textContent()).toMatch(new RegExp(`${held} — Resolved`));
    expect(await page.locator(`tr[id="${held}"]`).count()).toBe(0);

    await page.goto(`${url}/ui/tasks/${held}`);
    expect(await page.locator('h1 .badge').textContent()).toBe('succeeded');
    const actions = page.locator('h2:has-text("Operator actions") + .panel tbody tr');
    expect(await actions.count()).toBe(1);
    expect(await actions.first().textContent()).toMatch(/alice.*resolve.*found the order in the CRM by hand.*from needs_review · reference CRM-4711/);
    const attempts = page.locator('h2:has-text("Attempts") + .panel tbody tr');
    expect(await attempts.first().locator('.badge').textContent()).toBe('unknown');
    expect(await page.locator('dl.facts').textContent()).toMatch(/Stored body\s*\d+ B/);

    await page.screenshot({ path: `${ARTIFACTS}ui-task.png`, fullPage: true });
  });

  it('refuses a decision the state does not allow with the reason, and shows deliveries and stats', async () => {
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const retry = await page.request.post(`${url}/ui/tasks/${held}/retry`, { form: { note: 'again', _csrf: csrf }, maxRedirects: 0 });
    expect(retry.status()).toBe(303);
    await page.goto(`${url}/ui/tasks/${held}`);
    expect(await page.locator('.flash.error').textContent()).toMatch(/is succeeded; retry is allowed only from outcome_unknown, needs_review, failed/);

    await page.goto(`${url}/ui/deliveries`);
    expect(await page.locator('tbody tr').count()).toBe(5);
    await page.screenshot({ path: `${ARTIFACTS}ui-deliveries.png`, fullPage: true });
    await page.goto(`${url}/ui/attention`);
    await page.locator('tbody tr a').first().click();
    expect(await page.locator('form.decision h3').allTextContents()).toEqual(['Resolve', 'Retry', 'Cancel', 'Assign']);
    await page.screenshot({ path: `${ARTIFACTS}ui-task-held.png`, fullPage: true });

    await page.goto(`${url}/ui/deliveries?decision=duplicate_delivery`);
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.locator('tbody tr a').first().click();
    expect(await page.locator('p.lede').textContent()).toMatch(/^duplicate_delivery — the sender retried/);
    // A sender's retry keeps no bytes of its own: it shows those of the receipt it repeats.
    expect(JSON.parse((await page.locator('pre.body').textContent())!)).toMatchObject({ email: 'jon@example.com' });
    await page.screenshot({ path: `${ARTIFACTS}ui-delivery.png`, fullPage: true });

    // The search box: a filter in the actions' syntax, read by the same rules.
    await page.goto(`${url}/ui/deliveries`);
    await page.fill('#match', '{"body":{"total_price":{"$gte":10}},"topic":"orders/create"}');
    await page.locator('form.filters button[type=submit]').click();
    await page.waitForURL(/match=/);
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}ui-deliveries-search.png`, fullPage: true });
    await page.goto(`${url}/ui/rejections`);
    expect(await page.locator('h1').textContent()).toBe('Refused requests');
    await page.goto(`${url}/ui/stats`);
    await page.screenshot({ path: `${ARTIFACTS}ui-stats.png`, fullPage: true });

    await page.locator('header button', { hasText: 'Log out' }).click();
    await page.waitForURL(`${url}/ui/login`);
    await page.goto(`${url}/ui/attention`);
    expect(new URL(page.url()).pathname).toBe('/ui/login');
  });
});

describe('decisions in the browser are made on purpose', () => {
  const signIn = async (token: string) => {
    await page.goto(`${url}/ui/login`);
    await page.fill('input[name=token]', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/ui/home`);
  };

  it('Enter in a row\'s reference or note field decides nothing: an awaiting_approval task is not approved', async () => {
    await signIn(TOKENS.alice);
    const answer = await post(url, 'shop', shopifyDelivery({ eventId: 'ui-order-3001', topic: 'orders/gated' }));
    const gated = answer.json.tasks[0].id as string;
    const listed = `${url}/ui/attention?state=awaiting_approval`;
    await page.goto(listed);
    const row = page.locator(`tr[id="${gated}"]`);
    await row.locator('input[name=note]').fill('found it already in the CRM');
    await row.locator('input[name=reference]').fill('CRM-42');
    await row.locator('input[name=reference]').press('Enter');
    await row.locator('input[name=note]').press('Enter');
    // A submission would navigate; give it the time one takes.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(page.url()).toBe(listed);
    const untouched = await adminApi(url, TOKENS.bob)(`/api/tasks/${gated}`);
    expect(untouched.json).toMatchObject({ state: 'awaiting_approval', operatorActions: [] });

    await row.locator('button', { hasText: 'Resolve' }).click();
    await expect.poll(() => page.locator('.flash.ok').textContent()).toMatch(new RegExp(`${gated} — Resolved`));
    expect((await adminApi(url, TOKENS.bob)(`/api/tasks/${gated}`)).json).toMatchObject({ state: 'succeeded', resultReference: 'CRM-42' });
  });

  it('a replay form sent again after its replay finished (a double click) is refused, not a second replay', async () => {
    const api = adminApi(url, TOKENS.bob);
    const done = (await api('/api/tasks?eventId=ui-order-2001')).json.items[0].id as string;
    await page.goto(`${url}/ui/tasks/${done}`);
    const form = page.locator(`form[action="/ui/tasks/${done}/replay"]`);
    await form.locator('textarea').fill('the customer asked for it again');
    const fields = { _csrf: await form.locator('input[name=_csrf]').inputValue(), after: await form.locator('input[name=after]').inputValue(), note: 'again' };
    expect(fields.after).toBe('none');
    await form.locator('button').click();
    await page.waitForURL((to) => to.pathname.startsWith('/ui/tasks/') && !to.pathname.endsWith(done));
    const replay = new URL(page.url()).pathname.split('/').at(-1)!;
    await waitFor(async () => (await api(`/api/tasks/${replay}`)).json.state === 'succeeded', 20_000);

    // The second click of a double click, as the page sent it, arriving once the first replay has finished. The
    // request context may reuse a connection the server is closing as idle after the wait above: that POST fails
    // unread (ECONNRESET) and is sent again. Were it read after all, its twin is refused like it: one replay stays.
    const send = () => page.request.post(`${url}/ui/tasks/${done}/replay`, { form: fields, maxRedirects: 0 });
    const second = await send().catch((error: Error) => {
      if (!/ECONNRESET|socket hang up/.test(error.message)) throw error;
      return send();
    });
    expect(second.status()).toBe(303);
    expect(second.headers().location).toBe(`/ui/tasks/${done}`);
    await page.goto(`${url}/ui/tasks/${done}`);
    expect(await page.locator('.flash.error').textContent()).toMatch(new RegExp(`was replayed as ${replay} after the view`));
    expect((await api(`/api/tasks/${done}`)).json.replays).toHaveLength(1);
    // The page now shows that replay, and a further one is a decision taken knowing it.
    expect(await form.locator('input[name=after]').inputValue()).toBe(replay);
    expect(await form.textContent()).toMatch(/Already replayed, latest as/);
  });

  it('page links keep the page size and the order, on deliveries and in the attention list', async () => {
    const params = async (link: ReturnType<Page['locator']>) => new URL((await link.getAttribute('href'))!, url).searchParams;
    await page.goto(`${url}/ui/deliveries?limit=2&order=asc`);
    const firstPage = await page.locator('tbody tr td:nth-child(2)').allTextContents();
    const newer = page.locator('.pager a', { hasText: 'Newer →' });
    expect(Object.fromEntries(await params(newer))).toMatchObject({ limit: '2', order: 'asc', cursor: expect.any(String) });
    await newer.click();
    const secondPage = await page.locator('tbody tr td:nth-child(2)').allTextContents();
    expect(secondPage).toHaveLength(2);
    expect(secondPage.filter((id) => firstPage.includes(id))).toEqual([]);
    expect(Object.fromEntries(await params(page.locator('.pager a', { hasText: 'Oldest' })))).toEqual({ limit: '2', order: 'asc' });

    await page.goto(`${url}/ui/attention?limit=1&order=desc`);
    expect(Object.fromEntries(await params(page.locator('.pager a')))).toMatchObject({ limit: '1', order: 'desc', cursor: expect.any(String) });
  });
});

/** A chart's totals table as {key: number}, read as a person reads it. */
async function totals(table: ReturnType<Page['locator']>): Promise<Record<string, number>> {
  const rows = await table.locator('table.totals tbody tr[data-key]').evaluateAll((trs) =>
    trs.map((tr) => [tr.getAttribute('data-key')!, Number(tr.querySelectorAll('td')[1]!.textContent!.replaceAll(',', ''))] as const),
  );
  return Object.fromEntries(rows.filter(([, n]) => n > 0));
}

/** The bars' tooltips summed per key ("12:04–12:05 UTC: 3 accepted, 1 duplicate delivery"): what the picture says. */
async function barSums(chart: ReturnType<Page['locator']>): Promise<Record<string, number>> {
  const tips = await chart.locator(':scope > g > title').allTextContents();
  const sums: Record<string, number> = {};
  for (const tip of tips) {
    for (const [, n, key] of tip.matchAll(/(\d[\d,]*) ([a-z ]+?)(?=,|$)/g)) sums[key!.replaceAll(' ', '_')] = (sums[key!.replaceAll(' ', '_')] ?? 0) + Number(n!.replaceAll(',', ''));
  }
  return sums;
}

describe('the home page, the task list and bulk decisions', () => {
  const api = () => adminApi(url, TOKENS.bob);

  it('opens on charts of the last hour and day whose numbers are those of /api/stats', async () => {
    await page.goto(`${url}/ui`);
    expect(new URL(page.url()).pathname).toBe('/ui/home');
    for (const range of ['hour', 'day']) {
      await page.goto(`${url}/ui/home?range=${range}`);
      // Every delivery and attempt of this test happened within the hour: the window's totals are all of them.
      const stats = (await api()('/api/stats')).json;
      const attempts = Object.fromEntries(Object.entries(stats.attempts as Record<string, number>).filter(([, n]) => n > 0));
      expect(await totals(page.locator('#deliveries-numbers'))).toEqual(stats.decisions);
      expect(await totals(page.locator('#attempts-numbers'))).toEqual(attempts);
      expect(await barSums(page.locator('svg#deliveries-chart'))).toEqual(stats.decisions);
      expect(await barSums(page.locator('svg#attempts-chart'))).toEqual(attempts);
      const queue = Object.values(await totals(page.locator('#queue-numbers'))).reduce((a, b) => a + b, 0);
      expect(queue).toBe(stats.needsAttention.count);
      expect(await page.locator('.card', { hasText: 'need a person now' }).locator('.v').textContent()).toBe(String(stats.needsAttention.count));
      expect(await page.locator('.card', { hasText: 'oldest unresolved' }).textContent()).toContain(`${stats.unresolved.count} unresolved`);
      // An image a screen reader can name, one bar (with its tooltip) a minute or a quarter hour.
      const chart = page.locator('svg#deliveries-chart');
      expect(await chart.getAttribute('role')).toBe('img');
      expect(await chart.locator('title').first().textContent()).toBe(`Deliveries by decision, the last ${range}`);
      expect(await chart.locator(':scope > g > title').count()).toBe(range === 'hour' ? 60 : 96);
      await page.screenshot({ path: `${ARTIFACTS}ui-home-${range}.png`, fullPage: true });
    }
  });

  it('lists the tasks of a filter chosen in the form, as the API lists them', async () => {
    await page.goto(`${url}/ui/tasks`);
    await page.locator('input[name=state][value=needs_review]').check();
    await page.locator('select[name=source]').selectOption('shop');
    await page.locator('form.filters button[type=submit]').click();
    await page.waitForURL((to) => to.pathname === '/ui/tasks' && to.searchParams.get('state') === 'needs_review');
    const listed = (await api()('/api/tasks?state=needs_review&source=shop')).json.items.map((task: { id: string }) => task.id);
    expect(listed.length).toBe(2);
    expect(await page.locator('#task-list tbody tr').evaluateAll((trs) => trs.map((tr) => tr.id))).toEqual(listed);
    await page.screenshot({ path: `${ARTIFACTS}ui-tasks.png`, fullPage: true });

    // Several states, as a link writes them, and a page of one.
    await page.goto(`${url}/ui/tasks?state=needs_review,succeeded&limit=1`);
    expect(await page.locator('#task-list tbody tr').count()).toBe(1);
    expect(await page.locator('input[name=state]:checked').evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value))).toEqual(['succeeded', 'needs_review']);
    const next = new URL((await page.locator('.pager a', { hasText: 'Older →' }).getAttribute('href'))!, url).searchParams;
    expect(Object.fromEntries(next)).toMatchObject({ state: 'needs_review,succeeded', limit: '1', order: 'desc', cursor: expect.any(String) });
  });

  it('shows a bulk retry dry run with the API\'s count, then retries on a note', async () => {
    const filter = { state: 'needs_review', source: 'shop' };
    await page.goto(`${url}/ui/tasks?${new URLSearchParams(filter)}`);
    await page.locator('#bulk a', { hasText: 'Retry all' }).click();
    await page.waitForURL((to) => to.pathname === '/ui/tasks/bulk/retry');
    const dry = (await api()('/api/tasks/bulk/retry', { body: { ...filter, note: 'x', dryRun: true } })).json;
    const shown = async (key: string) => Number(await page.locator(`#dry-run tr[data-key=${key}] td.num`).textContent());
    expect(dry.count).toBe(2);
    expect(await shown('count')).toBe(dry.count);
    expect(await shown('skippedBodyPurged')).toBe(dry.skippedBodyPurged);
    expect(await shown('skippedByReplay')).toBe(dry.skippedByReplay);
    await page.screenshot({ path: `${ARTIFACTS}ui-bulk-dry-run.png`, fullPage: true });

    const form = page.locator('form.confirm');
    await form.locator('textarea[name=note]').fill('the CRM is back');
    await form.locator('button', { hasText: 'Retry 2 tasks' }).click();
    await expect.poll(() => page.locator('.flash.ok').textContent()).toMatch(/^Retried 2 tasks\./);
    for (const id of (await api()('/api/tasks?source=shop&state=needs_review,pending,in_progress')).json.items.map((t: { id: string }) => t.id)) {
      const actions = (await api()(`/api/tasks/${id}`)).json.operatorActions;
      expect(actions.at(-1)).toMatchObject({ kind: 'retry', actor: 'alice', note: 'the CRM is back', detail: { bulk: true } });
    }
  });

  it("a bulk replay's dry run counts what the API counts, and without a state it is refused in the API's words", async () => {
    await page.goto(`${url}/ui/tasks/bulk/replay?state=succeeded`);
    const dry = (await api()('/api/tasks/bulk/replay', { body: { state: 'succeeded', note: 'x', dryRun: true } })).json;
    expect(dry.skippedByReplay).toBe(1);
    expect(Number(await page.locator('#dry-run tr[data-key=count] td.num').textContent())).toBe(dry.count);
    expect(Number(await page.locator('#dry-run tr[data-key=skippedByReplay] td.num').textContent())).toBe(1);

    await page.goto(`${url}/ui/tasks?source=shop`);
    expect(await page.locator('#bulk').textContent()).toMatch(/Replay in bulk needs a state/);
    await page.goto(`${url}/ui/tasks/bulk/replay?source=shop`);
    expect(new URL(page.url()).pathname).toBe('/ui/tasks');
    expect(await page.locator('.flash.error').textContent()).toMatch(/a bulk replay needs it/);
  });
});

describe('an empty queue', () => {
  it('draws the empty queue\'s mark instead of an emoji the system fonts may lack', async () => {
    await page.goto(`${url}/ui/attention?state=awaiting_approval`);
    const empty = page.locator('.panel .empty');
    expect(await empty.textContent()).toMatch(/^\s*Nothing waits for a person\.\s*$/);
    expect(await empty.locator('svg').count()).toBe(1);
    await empty.screenshot({ path: `${ARTIFACTS}ui-attention-empty.png` });
  });
});
