/**
 * Charts drawn on the server as inline SVG: no script, no font of their own (text is the page's), colors as
 * presentation attributes (the CSP allows no inline style). Each is an image with a title and a description for a
 * screen reader, a tooltip (`<title>`) on every bar, and its numbers in a table beside it.
 */
import type { Series } from '../store/queries/time-buckets.ts';

const PALETTE: Record<string, string> = {
  accepted: '#2f9e5b',
  duplicate_delivery: '#7b5cc9',
  duplicate_event: '#a58ddf',
  duplicate_task: '#cfc1ef',
  success: '#2f9e5b',
  lookup_found: '#74c495',
  retryable: '#4a7bd8',
  open: '#9fc0f0',
  unknown: '#d99a1c',
  lookup_unanswered: '#ebc46a',
  lease_expired: '#b8892e',
  not_sent: '#98a2b3',
  released: '#c5cbd5',
  rejected: '#c94a4a',
  refused: '#8e2a2a',
  lookup_absent: '#e59090',
  transform_failed: '#6b3a3a',
  needs_review: '#d99a1c',
  outcome_unknown: '#ebc46a',
  failed: '#c94a4a',
  awaiting_approval: '#4a7bd8',
  pending: '#98a2b3',
};
const FALLBACK = ['#5d6b82', '#8792a6', '#b3bccb'];

/** A key's color; one the palette lacks gets a grey that stays the same for it. */
export const colorOf = (key: string) => PALETTE[key] ?? FALLBACK[[...key].reduce((n, ch) => n + ch.charCodeAt(0), 0) % FALLBACK.length]!;

export const words = (key: string) => key.replaceAll('_', ' ');
const count = (n: number) => n.toLocaleString('en');

/** A round number at or above `n` whose half is a whole number too: the axis's top, with its middle line. */
export function niceCeiling(n: number): number {
  if (n <= 2) return 2;
  const power = 10 ** Math.floor(Math.log10(n));
  return [1, 1.2, 1.6, 2, 3, 4, 5, 6, 8, 10].map((m) => Math.round(m * power)).find((top) => top >= n && top % 2 === 0) ?? 10 * power;
}

/** `14:05` in UTC: the page cannot know the reader's zone, so the tooltips say which one they use. */
const clock = (at: Date) => at.toISOString().slice(11, 16);

/** "60 min ago" … "now" under the bars; ticks every `every` buckets. */
function tickLabel(bucketsFromEnd: number, step: number): string {
  if (bucketsFromEnd === 0) return 'now';
  const seconds = bucketsFromEnd * step;
  return seconds < 3600 ? `${seconds / 60} min ago` : `${seconds / 3600} h ago`;
}

// About the width a panel gives it on a laptop's screen, so the labels' 11 px stay near 11 px.
const W = 1000;
const H = 200;
const LEFT = 44;
const RIGHT = 8;
const TOP = 8;
const BOTTOM = 22;

/** The keys to draw, in `order` first, then any other in the series by name. */
export const keysOf = (series: Series, order: readonly string[]) => [
  ...order.filter((key) => key in series.counts),
  ...Object.keys(series.counts).filter((key) => !order.includes(key)).sort(),
];

/** Each key's sum over the window. */
export const totalsOf = (series: Series, keys: readonly string[]) => keys.map((key) => [key, series.counts[key]!.reduce((a, b) => a + b, 0)] as const);

/** Stacked bars over time: one column per bucket, one band per key; an empty window says so in the plot. */
export function StackedBars({ id, title, desc, series, order, noun }: { id: string; title: string; desc: string; series: Series; order: readonly string[]; noun: string }) {
  const { window } = series;
  const keys = keysOf(series, order);
  const stacks = Array.from({ length: window.buckets }, (_, i) => keys.reduce((n, key) => n + series.counts[key]![i]!, 0));
  const top = niceCeiling(Math.max(0, ...stacks));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const column = plotW / window.buckets;
  const gap = column > 4 ? 1 : 0;
  const y = (n: number) => TOP + plotH - (n / top) * plotH;
  const every = window.range === 'hour' ? 10 : 12;
  const at = (i: number) => new Date(window.since.getTime() + i * window.step * 1000);
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-title ${id}-desc`} id={id}>
      <title id={`${id}-title`}>{title}</title>
      <desc id={`${id}-desc`}>{desc}</desc>
      {[0, top / 2, top].map((n) => (
        <g class="grid">
          <line x1={LEFT} x2={W - RIGHT} y1={y(n)} y2={y(n)} stroke="#e3e6ec" />
          <text x={LEFT - 6} y={y(n) + 4} text-anchor="end">
            {count(n)}
          </text>
        </g>
      ))}
      {stacks.map((total, i) => {
        let base = 0;
        const tip = `${clock(at(i))}–${clock(at(i + 1))} UTC: ${total === 0 ? `no ${noun}` : keys.filter((k) => series.counts[k]![i]! > 0).map((k) => `${count(series.counts[k]![i]!)} ${words(k)}`).join(', ')}`;
        return (
          <g>
            <title>{tip}</title>
            <rect x={LEFT + i * column} y={TOP} width={column} height={plotH} fill="transparent" />
            {keys.map((key) => {
              const n = series.counts[key]![i]!;
              if (n === 0) return null;
              const rect = <rect x={LEFT + i * column + gap / 2} y={y(base + n)} width={column - gap} height={y(base) - y(base + n)} fill={colorOf(key)} />;
              base += n;
              return rect;
            })}
          </g>
        );
      })}
      {Array.from({ length: window.buckets / every + 1 }, (_, k) => k * every).map((i) => (
        <text class="tick" x={LEFT + i * column} y={H - 6} text-anchor={i === 0 ? 'start' : i === window.buckets ? 'end' : 'middle'}>
          {tickLabel(window.buckets - i, window.step)}
        </text>
      ))}
      {stacks.every((n) => n === 0) ? (
        <text class="none" x={LEFT + plotW / 2} y={TOP + plotH / 2} text-anchor="middle">
          no {noun} in this window
        </text>
      ) : null}
    </svg>
  );
}

/** Horizontal bars, one per row: for figures of now rather than over time. */
export function Bars({ id, title, desc, rows }: { id: string; title: string; desc: string; rows: readonly { key: string; label: string; n: number }[] }) {
  const rowH = 26;
  const height = rows.length * rowH + 4;
  const labelW = 150;
  const top = niceCeiling(Math.max(0, ...rows.map((r) => r.n)));
  const barW = (n: number) => ((W - labelW - 60) * n) / top;
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${height}`} role="img" aria-labelledby={`${id}-title ${id}-desc`} id={id}>
      <title id={`${id}-title`}>{title}</title>
      <desc id={`${id}-desc`}>{desc}</desc>
      {rows.map((row, i) => (
        <g>
          <title>{`${row.label}: ${count(row.n)}`}</title>
          <text x={labelW - 8} y={i * rowH + 18} text-anchor="end">
            {row.label}
          </text>
          <rect x={labelW} y={i * rowH + 5} width={Math.max(row.n > 0 ? 2 : 0, barW(row.n))} height={rowH - 10} fill={colorOf(row.key)} />
          <text x={labelW + barW(row.n) + 6} y={i * rowH + 18}>
            {count(row.n)}
          </text>
        </g>
      ))}
    </svg>
  );
}

/** A key's swatch in a legend or a table: a square of its color, drawn, not a glyph. */
export const Swatch = ({ k }: { k: string }) => (
  <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
    <rect width="10" height="10" rx="2" fill={colorOf(k)} />
  </svg>
);
