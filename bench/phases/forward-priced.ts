/**
 * (d‴) What an action's URL template and its OAuth 2.0 token cost: (d)'s backlog, filled by real ingest and drained
 * by a `worker` gateway, for the bench's action as it is, with a URL naming a field of the delivery, and with a
 * client-credentials token from the downstream's token endpoint; alternating (plain, URL, OAuth, OAuth, URL, plain),
 * each on a fresh database. The URL is computed at ingest and stored with the task, so the fill's rate prices it too.
 */
import type { Context } from './context.ts';
import type { DrainResult } from './context.ts';
import { drainVariant, type VariantDrain } from './forward-variant.ts';
import type { ActionShape } from './shaped-cost.ts';

export const PRICED = ['plain', 'URL template', 'OAuth token'] as const;
export type Priced = (typeof PRICED)[number];

const SHAPES: Record<Priced, ActionShape> = {
  plain: {},
  // A record's URL, as a CRM's update takes it: one field of the delivery, percent-encoded into the path.
  'URL template': { urlPath: '/crm/contacts/{body:/customer/id}' },
  'OAuth token': { oauth2: true },
};

export interface PricedRun extends VariantDrain {
  variant: Priced;
  /** Every task forwarded; with a template, every task with its own URL; with OAuth, every request with the token. */
  asExpected: boolean;
}

export interface PricedFigures {
  variant: Priced;
  /** Means over the variant's runs: the fill's accepted/s, forwarded/s, the worker's CPU a task (µs). */
  acceptedPerSecond: number;
  forwardedPerSecond: number;
  workerUsPerTask: number | null;
  /** Each ÷ plain's; null for plain. */
  vsPlain: { acceptedPerSecond: number; forwardedPerSecond: number; workerUsPerTask: number | null } | null;
}

export interface ForwardPricedResult {
  runs: PricedRun[];
  figures: PricedFigures[];
}

const ORDER: Priced[] = [...PRICED, ...[...PRICED].reverse()];

/** The worker's CPU a task over a drain, in µs. */
export function workerUsPerTask({ cpu, elapsedMs, completed }: DrainResult): number | null {
  const share = cpu.processes.worker;
  return share === undefined || completed === 0 ? null : (share * elapsedMs * 1000) / completed;
}

export async function runForwardPriced(ctx: Context): Promise<ForwardPricedResult> {
  const runs: PricedRun[] = [];
  for (const [i, variant] of ORDER.entries()) {
    ctx.say(`run ${i + 1} of ${ORDER.length}: ${variant}`);
    const run = await drainVariant(ctx, `forward-priced-${i + 1}`, SHAPES[variant]);
    const sent = run.work.drained && run.work.downstreamReceived >= run.backlog;
    const shaped = variant === 'URL template' ? run.ownUrls === run.backlog : variant === 'OAuth token' ? run.authorized === run.work.downstreamReceived && run.tokens >= 1 : run.ownUrls === 0 && run.tokens === 0;
    runs.push({ ...run, variant, asExpected: sent && shaped });
  }
  return { runs, figures: pricedFigures(runs) };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export function pricedFigures(runs: PricedRun[]): PricedFigures[] {
  const figures = PRICED.flatMap((variant) => {
    const mine = runs.filter((run) => run.variant === variant && run.work.completed > 0);
    if (mine.length === 0) return [];
    const cpus = mine.map((run) => workerUsPerTask(run.work));
    return [{
      variant,
      acceptedPerSecond: mean(mine.map((run) => run.fill.acceptedPerSecond)),
      forwardedPerSecond: mean(mine.map((run) => run.work.perSecond)),
      workerUsPerTask: cpus.every((c) => c !== null) ? mean(cpus as number[]) : null,
    }];
  });
  const plain = figures.find((f) => f.variant === 'plain');
  return figures.map((f) => ({
    ...f,
    vsPlain:
      !plain || f === plain
        ? null
        : {
            acceptedPerSecond: f.acceptedPerSecond / plain.acceptedPerSecond,
            forwardedPerSecond: f.forwardedPerSecond / plain.forwardedPerSecond,
            workerUsPerTask: f.workerUsPerTask !== null && plain.workerUsPerTask !== null ? f.workerUsPerTask / plain.workerUsPerTask : null,
          },
  }));
}
