import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, ADMIN_TOKEN, setState, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;

beforeAll(async () => {
  // Web role: nothing forwards, so each task stays in the state the test puts it in.
  gateway = await startTestGateway(
    shopConfig({ crm: { url: 'http://127.0.0.1:9/crm' }, mail: { url: 'http://127.0.0.1:9/mail', after: 'crm' } }),
    { role: 'web', adminToken: ADMIN_TOKEN },
  );
  api = adminApi(gateway.url);
});
afterAll(async () => gateway?.close());

describe('a step waiting for the one before it', () => {
  // A step whose predecessor could no longer succeed stayed pending with nothing saying why.
  it('says what it waits for, and what a person can do once that one needs a person or was cancelled', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'steps-1' }));
    const { crm, mail } = Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id])) as Record<string, string>;

    const waiting = (await api(`/api/tasks/${mail}`)).json;
    expect(waiting.summary).toContain(`; waits for ${crm} (pending)`);
    expect(waiting.nextDecision).toBeNull();

    await setState(gateway.store.db, crm!, 'needs_review');
    expect((await api(`/api/tasks/${mail}`)).json.nextDecision).toBe(
      `It is sent once ${crm} succeeds, which is needs_review: settle that one first (oncehook explain ${crm}), or cancel this step, or resolve it if it was done by hand.`,
    );

    await setState(gateway.store.db, crm!, 'cancelled');
    const stranded = (await api(`/api/tasks/${mail}`)).json;
    expect(stranded.summary).toContain(`; waits for ${crm} (cancelled)`);
    expect(stranded.nextDecision).toMatch(/that was cancelled: cancel this step too, or resolve it/);
    expect(await signedInDashboard(gateway.url)(`/ui/tasks/${mail}`)).toContain('that was cancelled');

    await setState(gateway.store.db, crm!, 'succeeded');
    expect((await api(`/api/tasks/${mail}`)).json.summary).not.toContain('waits for');
  });

  // Following "retry" there sent the task again under its own key after the replay had made the effect.
  it('a failed task whose replay succeeded says so, and that a retry would be a second effect', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'steps-2' }));
    const crm = answer.json.tasks.find((t: { action: string }) => t.action === 'crm').id as string;
    await setState(gateway.store.db, crm, 'failed');
    const replay = await api(`/api/tasks/${crm}/replay`, { body: { note: 'the CRM is back' } });
    expect(replay.status).toBe(201);
    expect((await api(`/api/tasks/${crm}`)).json.nextDecision).toMatch(/^It was not done/);
    await setState(gateway.store.db, replay.json.id, 'succeeded');
    expect((await api(`/api/tasks/${crm}`)).json.nextDecision).toBe(
      `Its replay ${replay.json.id} succeeded, so the effect exists: resolve this one with that replay's reference, or cancel it. A retry would send it again under this task's own key — a second effect. Nobody has taken it yet.`,
    );
  });
});
