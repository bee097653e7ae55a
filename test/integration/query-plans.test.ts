import { sql, type SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/store/connect.ts';
import { ATTEMPTS_BY_CLASS } from '../../src/store/queries/attempt-series.ts';
import { listDeliveriesSql, tasksOfReceiptSql } from '../../src/store/queries/deliveries.ts';
import { RECEIPTS_BY_DECISION } from '../../src/store/queries/delivery-series.ts';
import { destinationUse, destinationUseSql, lookupsAskedSql } from '../../src/store/queries/destinations.ts';
import { bucketCountSql, windowOf } from '../../src/store/queries/time-buckets.ts';
import { purgeBatchSql, purgeHeadersSql } from '../../src/store/retention.ts';
import { attentionSql } from '../../src/store/queries/task-filter.ts';
import { listTasksSql } from '../../src/store/queries/tasks.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

/**
 * Lookups that run against tables growing without bound must have an index to walk. With sequential scans
 * priced out, the planner still picks one when no index can serve the query, so the plan names the gap.
 */
async function planOf(query: ReturnType<typeof sql>): Promise<string> {
  return t.store.db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('enable_seqscan', 'off', true)`);
    const rows = await rowsOf<{ 'QUERY PLAN': string }>(tx, sql`explain ${query}`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

/**
 * The claim's statement as oncehook_claim_batch runs it, planned under the function's own settings: its body, with
 * its arguments written in (a worker, `routes`, 64 tasks).
 */
async function claimPlanOf(routes: readonly object[]): Promise<string> {
  const [claim] = await rowsOf<{ definition: string }>(
    t.store.db,
    sql`select pg_get_functiondef('oncehook_claim_batch(text, jsonb, int)'::regprocedure) as definition`,
  );
  const { definition } = claim!;
  const statement = definition
    .slice(definition.indexOf('RETURN QUERY') + 'RETURN QUERY'.length, definition.lastIndexOf(';\nEND'))
    .replace(/\bworker\b/g, "'w'")
    .replace(/\bopen_routes\b/g, `'${JSON.stringify(routes)}'::jsonb`)
    .replace(/\bmax_tasks\b/g, '64');
  return t.store.db.transaction(async (tx) => {
    await tx.execute(sql`select set_config(split_part(c, '=', 1), split_part(c, '=', 2), true)
      from unnest((select proconfig from pg_proc where oid = 'oncehook_claim_batch(text, jsonb, int)'::regprocedure)) c`);
    const rows = await rowsOf<{ 'QUERY PLAN': string }>(tx, sql.raw(`explain (verbose, costs off) ${statement}`));
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

const rule = { keyed: true, keyRetentionMs: 60_000, lookup: true, maxAttempts: 3 };

describe('query plans', () => {
  // Every due task fetched and sorted, a claim costs what the backlog holds; walking the index, what it takes. A route
  // whose lookup origin may be paused reads its numbers per candidate.
  it('the claim walks tasks_due_idx in due order up to its limit, and asks an unknown outcome its rule inline', async () => {
    const route = { source: 'shop', action: 'crm', destination: 'https://crm.example', lookupDestination: 'https://search.example', ...rule, leaseMs: 30_000 };
    const plan = await claimPlanOf([route, { ...route, action: 'mail', lookupDestination: null, lookup: false }]);
    const picking = plan.slice(plan.indexOf('CTE picked'), plan.indexOf('CTE claimed'));
    expect(picking).toMatch(/Limit\n(.*\n)*\s+->  LockRows\n.*\n\s+->  Index Scan using tasks_due_idx on public\.tasks t\n/);
    expect(picking).not.toMatch(/Sort|Seq Scan/);
    // Inlined, the rule is an expression of the plan, not a function called for every candidate.
    expect(plan).toContain("THEN 'lookup'::text");
    expect(plan).not.toContain('oncehook_unknown_outcome_mode');
  });

  it("the views ask an unknown outcome's rule inline too: a lookup origin's waiting lookups, the tasks a paused one holds", async () => {
    for (const query of [
      destinationUseSql([{ origin: 'https://crm.example', route: 'shop:crm' }], [{ origin: 'https://search.example', route: 'shop:crm', ...rule }], []),
      lookupsAskedSql(['t_a', 't_b'], [{ route: 'shop/crm', ...rule }]),
    ]) {
      const plan = (await rowsOf<{ 'QUERY PLAN': string }>(t.store.db, sql`explain (verbose, costs off) ${query}`)).map((row) => row['QUERY PLAN']).join('\n');
      expect(plan).toContain("THEN 'lookup'::text");
      expect(plan).not.toContain('oncehook_unknown_outcome_mode');
    }
  });

  it("a receipt's repeats are read through an index, not by scanning every receipt", async () => {
    const plan = await planOf(sql`select id from deliveries d where d.matched_delivery_id = 'r_x' order by d.seq limit 50`);
    expect(plan).toContain('deliveries_repeats_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  // Claims and finishes no longer write these keys' index entries: the indexes live on task_refs.
  it('a page of tasks walks task_refs in (txid, task ID) order, from a cursor either way', async () => {
    const cursor = Buffer.from('1234:t_x').toString('base64url');
    for (const request of [
      { limit: 50, order: 'desc' as const },
      { limit: 50, order: 'asc' as const, cursor },
      { limit: 50, order: 'desc' as const, cursor },
    ]) {
      const plan = await planOf(listTasksSql({}, request, []));
      expect(plan).toContain('task_refs_page_idx');
      expect(plan).not.toContain('Seq Scan');
    }
  });

  it("a receipt's tasks are found through task_refs' receipt index", async () => {
    const plan = await planOf(tasksOfReceiptSql('r_x'));
    expect(plan).toContain('task_refs_delivery_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  // A page's task counts cost an index lookup a receipt, not a pass over the tasks.
  it("a page of deliveries walks their page index and counts each one's tasks through task_refs' receipt index", async () => {
    const plan = await planOf(listDeliveriesSql({}, { limit: 50, order: 'desc' }, []));
    expect(plan).toContain('deliveries_page_idx');
    expect(plan).toMatch(/task_refs_delivery_idx.*\n\s+Index Cond: \(delivery_id = d\.id\)/);
    expect(plan).not.toContain('Seq Scan');
  });

  // The queue is a sliver of all tasks: it is read through the states' indexes and sorted, never found by walking
  // every task in page order, nor by reading every pending task for the few waiting steps among them (the pending
  // tab asks for those). A paused destination's routes add their backlog, read through the due index: a page then
  // costs what the queue holds (350 ms with 66,000 tasks held among a million, measured on PostgreSQL).
  it('the attention queue, its count and a narrowed page are read through the state, waiting steps and due indexes', async () => {
    for (const heldRoutes of [[], ['shop/crm', 'shop/mail']]) {
      const attention = { heldRoutes };
      for (const [query, steps] of [
        [listTasksSql({ attention }, { limit: 100, order: 'asc' }, []), 'Bitmap Index Scan on tasks_waiting_steps_idx'],
        [
          listTasksSql({ attention, states: ['pending'] }, { limit: 100, order: 'desc', cursor: Buffer.from('1234:t_x').toString('base64url') }, []),
          "Index Cond: (state = 'pending'::text)",
        ],
        [sql`select count(*) from tasks where ${attentionSql(heldRoutes)}`, 'Bitmap Index Scan on tasks_waiting_steps_idx'],
      ] as const) {
        const plan = await planOf(query);
        expect(plan).toContain('tasks_state_idx');
        expect(plan).toContain(steps);
        // Each waiting step's predecessor is read by its key.
        expect(plan).toMatch(/Index Scan using tasks_pkey on tasks predecessor\s+\(.*\n\s+Index Cond: \(id = tasks\.after_task_id\)/);
        // The plan to avoid: every task in page order, each looked up by its key and then filtered.
        expect(plan).not.toMatch(/tasks_pkey on tasks(?! predecessor)/);
        // A replay chain is followed link by link, never by reading every replay ever made.
        expect(plan).not.toMatch(/Bitmap Index Scan on tasks_replay_idx|Seq Scan/);
        // Pages on the task's own txid: joined to task_refs, the planner walked every task's refs in page order or
        // hashed them all (1.8 s and 0.5 s for a page at 500,000 tasks).
        expect(plan).not.toContain('task_refs');
      }
    }
  });

  // A batch reads the rows it purges, in order, from the index that holds only those: never the tombstones
  // behind it nor the unfinished, and never a sort of the whole window (a round cost the square of its size).
  it('a purge batch walks tasks_purge_idx in order, from the start or from where the last batch ended', async () => {
    for (const after of [null, { at: '2026-01-01 00:00:00.123456+00', id: 't_x' }]) {
      const plan = await planOf(purgeBatchSql('shop', 86_400_000, 500, after));
      const choosing = plan.slice(plan.indexOf('CTE expired'), plan.indexOf('CTE purged'));
      expect(choosing).toContain('Index Scan using tasks_purge_idx');
      expect(choosing).not.toContain('Sort');
      expect(plan).not.toContain('Seq Scan');
    }
  });

  // The same for receipts' headers: only the receipts that still hold headers are in the index, and a batch's other
  // events are found by the index on the receipt they name.
  it('a headers purge batch walks deliveries_headers_purge_idx in order, and finds a batch by deliveries_headers_from_idx', async () => {
    for (const after of [null, { at: '2026-01-01 00:00:00.123456+00', id: 'r_x' }]) {
      const plan = await planOf(purgeHeadersSql('shop', 86_400_000, 500, after));
      const choosing = plan.slice(plan.indexOf('CTE expired'), plan.indexOf('CTE purged'));
      expect(choosing).toMatch(/Index (Only )?Scan using deliveries_headers_purge_idx/);
      expect(choosing).not.toContain('Sort');
      expect(plan).toContain('deliveries_headers_from_idx');
      expect(plan).toContain('task_refs_delivery_idx');
      expect(plan).not.toContain('Seq Scan');
    }
  });

  it("an event's tasks are found through task_refs' event index, with or without a source", async () => {
    for (const filter of [{ source: 'shop', eventId: 'e_x' }, { eventId: 'e_x' }]) {
      const plan = await planOf(listTasksSql(filter, { limit: 50, order: 'desc' }, []));
      expect(plan).toContain('task_refs_event_idx');
      expect(plan).not.toContain('Seq Scan');
    }
  });

  // The home page's charts: a window of the last hour or day, found through a BRIN index of the time (migration
  // 0017), never by reading every receipt or attempt ever made (410 and 520 ms at 3,000,000 each, against 30 ms).
  it("the charts' counts find their window through the time indexes, whole or a slice at a time", async () => {
    for (const [counted, index] of [[RECEIPTS_BY_DECISION, 'deliveries_received_idx'], [ATTEMPTS_BY_CLASS, 'attempts_started_idx']] as const) {
      for (const range of ['hour', 'day'] as const) {
        const window = await windowOf(t.store.db, range);
        for (const to of [null, new Date(window.since.getTime() + 60_000)]) {
          const plan = await planOf(bucketCountSql(counted, window, window.since, to));
          expect(plan).toContain(`Bitmap Index Scan on ${index}`);
          expect(plan).not.toContain('Seq Scan');
        }
      }
    }
  });

  it("a count past JIT's cost threshold is planned without compiling: a day of a few hundred thousand receipts passes it", async () => {
    const window = await windowOf(t.store.db, 'day');
    const plan = await t.store.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('jit_above_cost', '0', true), set_config('enable_seqscan', 'off', true)`);
      const rows = await rowsOf<{ 'QUERY PLAN': string }>(tx, sql`explain ${bucketCountSql(RECEIPTS_BY_DECISION, window, window.since, null)}`);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('deliveries_received_idx');
    expect(plan).not.toContain('JIT');
  });

  // Each origin counted its waiting tasks in a subquery of its own, so every due task was read once per origin, and
  // the estimate that made set off JIT compilation. Measured on PostgreSQL with 200,000 due tasks among 1.2 million
  // and three origins: 1.95 s for each GET /api/destinations and Destinations page, 1.3 s of it compiling; 0.09 s
  // with the due tasks read once.
  it("destinations' use reads the due tasks once, whatever the number of origins, lookup origins included", async () => {
    const statements: SQL[] = [];
    const recording = (db: Pick<Db, 'execute' | 'transaction'>): Pick<Db, 'execute' | 'transaction'> => ({
      execute: ((query: SQL) => {
        statements.push(query);
        return db.execute(query);
      }) as Db['execute'],
      transaction: ((work: (tx: Db) => Promise<unknown>) => db.transaction((tx) => work(recording(tx) as Db))) as Db['transaction'],
    });
    const routes = [0, 1, 2, 3, 4, 5].map((i) => ({ origin: `https://o${i % 3}.example`, route: `shop:a${i}` }));
    const lookups = [0, 1].map((i) => ({ origin: 'https://search.example', route: `shop:a${i}`, keyed: true, keyRetentionMs: 60_000, lookup: true, maxAttempts: 3 }));
    await destinationUse(recording(t.store.db) as Db, routes, lookups, [{ origin: 'https://o0.example', perSecond: 10, burst: 10 }]);
    const [row] = await rowsOf<{ 'QUERY PLAN': unknown }>(t.store.db, sql`explain (format json) ${statements.at(-1)!}`);
    const plan = row!['QUERY PLAN'];
    type Node = Record<string, unknown> & { Plans?: Node[] };
    const root = (typeof plan === 'string' ? JSON.parse(plan) : plan) as [{ Plan: Node }];
    // Every node that reads tasks for the due ones, each with whether a per-origin subquery runs it.
    const reads: { perOrigin: boolean }[] = [];
    const walk = (node: Node, perOrigin: boolean) => {
      const inSubPlan = perOrigin || node['Parent Relationship'] === 'SubPlan';
      if (node['Relation Name'] === 'tasks' && JSON.stringify(node).includes('next_attempt_at')) reads.push({ perOrigin: inSubPlan });
      for (const child of node.Plans ?? []) walk(child, inSubPlan);
    };
    walk(root[0].Plan, false);
    expect(reads).toEqual([{ perOrigin: false }]);
  });
});
