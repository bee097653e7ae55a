import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { rows, taskIn } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { runCli } from '../support/process.ts';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { AdminTokens } from '../../src/http/tokens.ts';
import { SESSION_COOKIE, signSession } from '../../src/ui/session.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let downstream: Downstream;
let gateway: TestGateway;
const running = () => {
  const actions: Record<string, Record<string, unknown>> = {
    crm: { url: `${downstream.url}/crm`, idempotency: 'key' },
    erp: { url: `${downstream.url}/erp/{body:/id}`, idempotency: 'key' },
    ledger: { url: `${downstream.url}/ledger`, idempotency: 'key', order: { key: '{body:/id}', by: '{body:/total_price}', mode: 'sequence' } },
  };
  return { ...shopConfig(actions), actions };
};
/** The receipts made by the deliveries below, by their total. */
const receipts = new Map<string, string>();
const TOTALS = ['5.00', '12.50', '7.25', '40.00', '9.99', '100.00'];

beforeAll(async () => {
  downstream = await startDownstream();
  const { actions: _, ...config } = running();
  gateway = await startTestGateway(config, { adminToken: ADMIN_TOKEN });
  for (const [i, total] of TOTALS.entries()) {
    const body = JSON.stringify({ id: 1000 + i, email: `buyer${i}@example.com`, total_price: Number(total) });
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `try-${i}`, body }));
    receipts.set(total, answer.json.receipt ?? (await receiptOf(`try-${i}`)));
    for (const { id } of answer.json.tasks) await taskIn(gateway.store.db, id, 'succeeded');
  }
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

async function receiptOf(eventId: string): Promise<string> {
  return (await rows<{ id: string }>(gateway.store.db, sql`select id from deliveries where event_id = ${eventId}`))[0]!.id;
}

/** Every row a try could write, counted. */
const written = async () =>
  (await rows<{ n: string }>(gateway.store.db, sql`select (select count(*) from tasks) + (select count(*) from deliveries) + (select count(*) from attempts) + (select count(*) from operator_actions) as n`))[0]!.n;

describe('trying a config on the deliveries already received', () => {
  it('reports exactly the deliveries a new filter drops, a new action, a changed url; and sends or writes nothing', async () => {
    const { actions, ...tried } = running();
    actions.crm!.filter = { body: { total_price: { $gte: 10 } } };
    actions.erp!.url = `${downstream.url}/erp/v2/{body:/id}`;
    actions.audit = { url: `${downstream.url}/audit`, idempotency: 'key' };
    // These orders carry no updated_at: an action ordered by it would fail every task, and says why.
    actions.ordered = { url: `${downstream.url}/ordered`, order: { key: '{body:/id}', by: '{body:/updated_at}', mode: 'sequence' } };
    const requestsBefore = downstream.requests().length;
    const rowsBefore = await written();

    const answer = await adminApi(gateway.url)('/api/config/try', { body: { config: tried, last: 100 } });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ tried: TOTALS.length, notRetained: 0 });
    const byAction = Object.fromEntries(answer.json.actions.map((a: { action: string }) => [a.action, a]));
    const dropped = TOTALS.filter((total) => Number(total) < 10).map((total) => receipts.get(total));
    expect(byAction.crm).toMatchObject({ same: TOTALS.length - dropped.length, made: { count: 0 }, shapedDifferently: { count: 0 } });
    expect(byAction.crm.notMade.count).toBe(dropped.length);
    expect(byAction.crm.notMade.examples.map((e: { receipt: string }) => e.receipt).sort()).toEqual(dropped.sort());
    expect(byAction.crm.notMade.examples[0].detail).toMatch(/total_price/);
    expect(byAction.erp).toMatchObject({ same: 0, shapedDifferently: { count: TOTALS.length } });
    expect(byAction.erp.shapedDifferently.examples[0].detail).toMatch(/^another url: .*\/erp\/\d+ → .*\/erp\/v2\/\d+$/);
    expect(byAction.audit).toMatchObject({ same: 0, made: { count: TOTALS.length }, notMade: { count: 0 } });
    expect(byAction.ordered.made.examples[0].detail).toBe('its order fails: order.by needs {body:/updated_at}, which this delivery does not have');

    // Sends nothing, and writes nothing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(downstream.requests().length).toBe(requestsBefore);
    expect(await written()).toBe(rowsBefore);
  });

  it("reports a task's changed place in order: another key, mode or position, newly ordered, or no longer", async () => {
    const tryWith = async (ledger: Record<string, unknown>) => {
      const { actions, ...tried } = running();
      actions.ledger = ledger;
      actions.crm!.order = { key: '{body:/id}', mode: 'sequence' };
      const answer = await adminApi(gateway.url)('/api/config/try', { body: { config: tried, last: 100 } });
      expect(answer.status).toBe(200);
      const byAction = Object.fromEntries(answer.json.actions.map((a: { action: string }) => [a.action, a]));
      expect(byAction.crm.shapedDifferently.count).toBe(TOTALS.length);
      expect(byAction.crm.shapedDifferently.examples[0].detail).toMatch(/^now in order: key 10\d\d \(sequence\)$/);
      expect(byAction.ledger.shapedDifferently.count).toBe(TOTALS.length);
      return byAction.ledger.shapedDifferently.examples.map((e: { detail: string }) => e.detail) as string[];
    };
    const url = `${downstream.url}/ledger`;
    const moved = await tryWith({ url, idempotency: 'key', order: { key: '{body:/email}', by: '{body:/id}', mode: 'latest' } });
    expect(moved[0]).toMatch(/^another order key: 10\d\d → buyer\d@example\.com; another order mode: sequence → latest; another order position: [\d.]+ → 10\d\d$/);
    expect(await tryWith({ url, idempotency: 'key', order: { key: '{body:/id}', mode: 'sequence' } })).toContainEqual(expect.stringMatching(/^another order position: [\d.]+ → arrival$/));
    expect(await tryWith({ url, idempotency: 'key' })).toContainEqual(expect.stringMatching(/^no longer in order \(was key 10\d\d\)$/));
  });

  it('refuses a config with problems, each at its path; the CLI prints the report or each problem', async () => {
    const broken = { sources: { shop: { adapter: 'shopfy', secrets: ['s3cret-value'], actions: {} } } };
    const refused = await adminApi(gateway.url)('/api/config/try', { body: { config: broken } });
    expect(refused.status).toBe(422);
    expect(refused.json.error.code).toBe('invalid_config');
    expect(refused.json.problems).toContainEqual(expect.stringMatching(/^sources\.shop\.adapter: "shopfy" is not an option: did you mean "shopify"/));

    const folder = mkdtempSync(join(tmpdir(), 'oncehook-try-'));
    const env = { ONCEHOOK_URL: gateway.url, ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN };
    writeFileSync(join(folder, 'broken.json'), JSON.stringify(broken));
    const cliRefused = await runCli(['try-config', join(folder, 'broken.json')], env);
    expect(cliRefused.code).toBe(1);
    expect(cliRefused.stderr).toMatch(/problem.*\n\s+sources\.shop\.adapter: /);

    const { actions, ...tried } = running();
    actions.erp!.url = `${downstream.url}/erp/v2/{body:/id}`;
    writeFileSync(join(folder, 'tried.json'), JSON.stringify(tried));
    const report = await runCli(['try-config', join(folder, 'tried.json'), '--last', '3', '--source', 'shop'], env);
    expect(report.code).toBe(0);
    expect(report.stdout).toMatch(/^tried 3 deliveries; nothing was sent or written\nshop\/crm: 3 the same\nshop\/erp: 0 the same · 3 shaped differently\n  shaped differently: d_/);
  });

  it('on the dashboard: the running version and the instances, and a pasted config tried, or its problems listed', async () => {
    const cookie = `${SESSION_COOKIE}=${signSession(new AdminTokens(ADMIN_TOKEN), 'admin')}`;
    const page = await (await fetch(`${gateway.url}/ui/config`, { headers: { cookie } })).text();
    const { configVersion } = await (await fetch(`${gateway.url}/readyz`)).json();
    expect(page).toContain(`runs config version <code>${configVersion}</code>`);
    expect(page).toMatch(new RegExp(`<td>all</td><td><code>${configVersion}</code></td>`));
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const tryIt = async (config: string) =>
      (await fetch(`${gateway.url}/ui/config/try`, { method: 'POST', headers: { cookie }, body: new URLSearchParams({ config, last: '100', source: '', _csrf: csrf }) })).text();

    const { actions, ...tried } = running();
    actions.crm!.filter = { body: { total_price: { $gte: 10 } } };
    const report = await tryIt(JSON.stringify(tried));
    expect(report).toContain(`Tried on ${TOTALS.length} deliveries`);
    expect(report).toMatch(new RegExp(`<td>shop/crm</td><td class="num">${TOTALS.length - 3}</td><td class="num">0</td><td class="num">3</td><td class="num">0</td>`));
    expect(report).toMatch(/<td>not made<\/td><td><a href="\/ui\/deliveries\/d_[^"]+">/);

    const refused = await tryIt('{"sources": {"shop": {"adapter": "shopfy"}}}');
    expect(refused).toContain('Not tried: the config has');
    expect(refused).toMatch(/sources\.shop\.adapter: &quot;shopfy&quot; is not an option/);
  });
});
