import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopifyDelivery, type Answer } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { runCli, spawnGateway } from '../support/process.ts';

const engines = [
  {
    name: 'PostgreSQL',
    async place() {
      const database = await freshPostgresDatabase();
      return { env: { DATABASE_URL: database.url }, drop: () => database.drop() };
    },
  },
  {
    name: 'embedded PGlite',
    async place(root: string) {
      return { env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: join(root, 'data') }, drop: async () => {} };
    },
  },
];

const FIRST_SECRET = 'reload-first-secret';
const ROTATED_SECRET = 'reload-rotated-secret';
const RATE_PER_SECOND = 50;
const LOAD_MS = 10_000;

let downstream: Downstream;
beforeAll(async () => {
  downstream = await startDownstream();
});
afterAll(async () => downstream?.close());

/** A config of one Shopify source whose actions are named by `actions`, each sending to its own path. */
function configOf(actions: string[], secrets: string[] = [FIRST_SECRET]) {
  return {
    sources: {
      shop: {
        adapter: 'shopify',
        secrets,
        actions: Object.fromEntries(
          actions.map((name) => [name, { url: `${downstream.url}/${name}`, idempotency: 'key', maxAttempts: 50, backoff: { initialMs: 100, maxMs: 500 } }]),
        ),
      },
    },
  };
}

/**
 * Deliveries go on at 50 a second through five reloads that alternate two configs, by the API and by SIGHUP: each
 * is answered 2xx, and the tasks of each follow the config that ran when it arrived. A config with problems is
 * refused whole; a rotated secret verifies the next delivery; a removed action's tasks wait and go once it is back.
 */
describe.concurrent.each(engines)('reloading the config while deliveries arrive, on $name', ({ name, place }) => {
  it('answers every delivery 2xx, follows each config, refuses a bad one, and loses or doubles nothing', { timeout: 120_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'oncehook-reload-'));
    const file = join(root, 'oncehook.json');
    const { env, drop } = await place(root);
    const prefix = name === 'PostgreSQL' ? 'pg' : 'lite';
    // Each engine's actions have names of their own: the two share one downstream.
    const [a, b] = [`${prefix}a`, `${prefix}b`];
    writeFileSync(file, JSON.stringify(configOf([a])));
    const gateway = await spawnGateway({ args: ['--config', file], env: { ...env, ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN } });
    const api = adminApi(gateway.url);
    const version = async () => (await (await fetch(`${gateway.url}/readyz`)).json()).configVersion as string;
    try {
      const answers: { sentAt: number; answeredAt: number; answer: Answer }[] = [];
      /** The windows in which one config ran: from a reload's answer to the next reload's start. */
      const windows: { from: number; to: number; actions: string[] }[] = [{ from: 0, to: Infinity, actions: [a] }];
      let sent = 0;
      const probes: Answer[] = [];
      const load = (async () => {
        const started = performance.now();
        const inFlight: Promise<void>[] = [];
        while (performance.now() - started < LOAD_MS) {
          const due = started + (sent * 1000) / RATE_PER_SECOND;
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
          const delivery = shopifyDelivery({ eventId: `${prefix}-load-${sent++}`, secret: FIRST_SECRET });
          const sentAt = performance.now();
          inFlight.push(post(gateway.url, 'shop', delivery).then((answer) => void answers.push({ sentAt, answeredAt: performance.now(), answer })));
        }
        await Promise.all(inFlight);
      })();

      const reloadTo = async (actions: string[], by: 'api' | 'signal') => {
        const before = await version();
        writeFileSync(file, JSON.stringify(configOf(actions)));
        windows.at(-1)!.to = performance.now();
        if (by === 'api') {
          const answer = await api('/api/config/reload', { body: {} });
          expect(answer.status).toBe(200);
          expect(answer.json).toMatchObject({ reloaded: true, previousVersion: before });
        } else {
          gateway.child.kill('SIGHUP');
          await waitFor(async () => (await version()) !== before, 10_000);
        }
        windows.push({ from: performance.now(), to: Infinity, actions });
        // Sent after the reload answered and answered before the next begins: whatever the load does to the
        // others' timing, this one meets the new config.
        const probe = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${prefix}-probe-${windows.length}`, secret: FIRST_SECRET }));
        expect(probe.json.tasks.map((t: { action: string }) => t.action)).toEqual(actions);
        probes.push(probe);
      };
      const plan: [string[], 'api' | 'signal'][] = [
        [[b], 'api'],
        [[a], 'signal'],
        [[b], 'api'],
        [[a], 'api'],
        [[b], 'signal'],
      ];
      // At fixed points of the load, whatever each reload takes: the last one still has deliveries after it.
      const loadStarted = performance.now();
      for (const [i, [actions, by]] of plan.entries()) {
        const at = loadStarted + ((i + 1) * LOAD_MS) / (plan.length + 1);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));
        await reloadTo(actions, by);
      }
      await load;

      expect(answers).toHaveLength(sent);
      expect(answers.filter(({ answer }) => answer.status !== 200).map(({ answer }) => [answer.status, answer.json])).toEqual([]);
      for (const { sentAt, answeredAt, answer } of answers) {
        const inside = windows.find((w) => sentAt > w.from && answeredAt < w.to);
        if (inside) expect(answer.json.tasks.map((t: { action: string }) => t.action)).toEqual(inside.actions);
      }

      // A config with problems: refused whole with each problem at its path, and the running one stays.
      const running = await version();
      writeFileSync(file, JSON.stringify({ ...configOf([a, b]), sources: { shop: { ...configOf([a, b]).sources.shop, actoins: {} } } }));
      const refused = await api('/api/config/reload', { body: {} });
      expect(refused.status).toBe(422);
      expect(refused.json).toMatchObject({ error: { code: 'invalid_config' }, configVersion: running });
      expect(refused.json.problems).toEqual([expect.stringMatching(/^sources\.shop: .*actoins.*did you mean .*actions/)]);
      const cli = await runCli(['reload'], { ONCEHOOK_URL: gateway.url, ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(/1 problem.*\n\s+sources\.shop: /);
      expect(await version()).toBe(running);
      const still = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${prefix}-after-refusal`, secret: FIRST_SECRET }));
      expect(still.json.tasks.map((t: { action: string }) => t.action)).toEqual([b]);

      // Both actions back, and a rotated secret: the next delivery verifies with it, the old one is refused.
      writeFileSync(file, JSON.stringify(configOf([a, b], [ROTATED_SECRET])));
      const both = await runCli(['reload'], { ONCEHOOK_URL: gateway.url, ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN });
      expect(both.code).toBe(0);
      expect(both.stdout).toMatch(/config reloaded: version [0-9a-f]{12}, was [0-9a-f]{12}/);
      expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${prefix}-rotated`, secret: ROTATED_SECRET }))).status).toBe(200);
      expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${prefix}-old-secret`, secret: FIRST_SECRET }))).status).toBe(401);

      // Every task made, including those whose action was removed for a while, reaches its downstream once.
      const made = [...answers.map(({ answer }) => answer), ...probes, still].flatMap((answer) => answer.json.tasks as { id: string; action: string }[]);
      const effects = () => downstream.effects().filter((effect) => effect.path === `/${a}` || effect.path === `/${b}`);
      await waitFor(() => effects().length >= made.length + 2, 60_000);
      const keys = effects().map((effect) => effect.key);
      expect(new Set(keys).size).toBe(keys.length);
      for (const task of made) expect(effects().find((effect) => effect.key === task.id)?.path).toBe(`/${task.action}`);
    } finally {
      await gateway.stop();
      await drop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
