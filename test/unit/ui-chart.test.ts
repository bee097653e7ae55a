import { jsx } from 'hono/jsx';
import { describe, expect, it } from 'vitest';
import type { Series } from '../../src/store/queries/time-buckets.ts';
import { Bars, niceCeiling, StackedBars } from '../../src/ui/chart.tsx';

const html = (node: unknown) => String(node);

/** An hour's series with `counts` in its last buckets. */
function hour(counts: Record<string, number[]>): Series {
  const full = Object.fromEntries(Object.entries(counts).map(([key, tail]) => [key, [...new Array<number>(60 - tail.length).fill(0), ...tail]]));
  return { window: { range: 'hour', since: new Date('2026-12-01T13:01:00Z'), step: 60, buckets: 60 }, counts: full };
}

describe('charts', () => {
  it.each([
    [0, 2, 'at least 2, so an empty chart still has a middle line'],
    [3, 4, 'a half of 2'],
    [5, 6, 'not 5, whose half is 2.5'],
    [11, 12, 'not 20, which would leave half the plot empty'],
    [101, 120, 'tens of a hundred'],
    [45_000, 50_000, 'thousands'],
  ])('niceCeiling(%i) is %i: %s', (n, top) => {
    expect(niceCeiling(n)).toBe(top);
    expect(top % 2).toBe(0);
  });

  it('draws a column a bucket with its tooltip, the bands stacked in order, and names the image', () => {
    const svg = html(jsx(StackedBars, { id: 'c', title: 'Deliveries', desc: 'by decision', series: hour({ duplicate_delivery: [1, 0], accepted: [3, 2] }), order: ['accepted', 'duplicate_delivery'], noun: 'deliveries' }));
    expect(svg).toMatch(/^<svg class="chart" viewBox="0 0 1000 200" role="img" aria-labelledby="c-title c-desc" id="c"><title id="c-title">Deliveries<\/title><desc id="c-desc">by decision<\/desc>/);
    const tips = [...svg.matchAll(/<g><title>([^<]*)<\/title>/g)].map((m) => m[1]);
    expect(tips).toHaveLength(60);
    expect(tips[0]).toBe('13:01–13:02 UTC: no deliveries');
    expect(tips.slice(-2)).toEqual(['13:59–14:00 UTC: 3 accepted, 1 duplicate delivery', '14:00–14:01 UTC: 2 accepted']);
    // The tallest column (4) under a top of 4: the accepted band from the axis up, the duplicate on it.
    const last2 = svg.slice(svg.lastIndexOf('13:59–14:00'));
    expect([...last2.matchAll(/fill="(#[0-9a-f]+)"/g)].map((m) => m[1]).slice(0, 2)).toEqual(['#2f9e5b', '#7b5cc9']);
    expect(svg).toContain('>1 h ago</text>');
    expect(svg).toContain('>now</text>');
    expect(svg).not.toContain('no deliveries in this window');
  });

  it('says so in the plot when the window is empty', () => {
    expect(html(jsx(StackedBars, { id: 'c', title: 't', desc: 'd', series: hour({}), order: [], noun: 'attempts' }))).toContain('no attempts in this window');
  });

  it('draws a bar a row with its number, and a zero as no bar', () => {
    const svg = html(jsx(Bars, { id: 'q', title: 'Queue', desc: 'now', rows: [{ key: 'failed', label: 'failed', n: 3 }, { key: 'needs_review', label: 'needs review', n: 0 }] }));
    expect([...svg.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => m[1])).toEqual(['failed: 3', 'needs review: 0']);
    expect([...svg.matchAll(/<rect[^>]*width="([\d.]+)"/g)].map((m) => Number(m[1]))).toEqual([(1000 - 150 - 60) * (3 / 4), 0]);
  });
});
