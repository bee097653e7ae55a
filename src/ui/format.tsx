/** Small pieces every page uses: times, ages, sizes, IDs and state badges. */

const exact = (at: Date) => at.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

/** "3 min ago" (or "in 2 min" for a future time), for a person scanning a list. */
export function ago(at: Date, now = Date.now()): string {
  const seconds = Math.round((now - at.getTime()) / 1000);
  const span = Math.abs(seconds);
  const words =
    span < 5 ? 'just now'
    : span < 60 ? `${span} s`
    : span < 3600 ? `${Math.floor(span / 60)} min`
    : span < 86_400 ? `${Math.floor(span / 3600)} h ${Math.floor((span % 3600) / 60)} min`
    : `${Math.floor(span / 86_400)} d ${Math.floor((span % 86_400) / 3600)} h`;
  if (words === 'just now') return words;
  return seconds >= 0 ? `${words} ago` : `in ${words}`;
}

/** An age in seconds as words: "4 min", "2 h 5 min". */
export function duration(seconds: number | null): string {
  if (seconds === null) return '—';
  return ago(new Date(Date.now() - seconds * 1000)).replace(/ ago$/, '').replace('just now', '< 5 s');
}

export function Time({ at }: { at: Date | string | null }) {
  if (at === null) return <span class="muted">—</span>;
  const date = new Date(at);
  return (
    <time datetime={date.toISOString()} title={exact(date)}>
      {ago(date)}
    </time>
  );
}

export function bytes(n: number | null): string {
  if (n === null) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function ms(n: number | null): string {
  if (n === null) return '—';
  return n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(1)} s`;
}

/** An ID in monospace, kept on one line; long ones are shortened visibly with the whole in the title. */
export function Id({ value, href, max = 40 }: { value: string; href?: string; max?: number }) {
  const shown = value.length > max ? `${value.slice(0, max - 1)}…` : value;
  const text = <code class="id" title={value}>{shown}</code>;
  return href ? <a href={href}>{text}</a> : text;
}

const TONES: Record<string, string> = {
  succeeded: 'ok',
  accepted: 'ok',
  success: 'ok',
  open: 'ok',
  needs_review: 'warn',
  outcome_unknown: 'warn',
  awaiting_approval: 'warn',
  unknown: 'warn',
  cooling: 'warn',
  failed: 'bad',
  refused: 'bad',
  rejected: 'bad',
  lookup_found: 'ok',
  lookup_unanswered: 'warn',
  retryable: 'info',
  permanent: 'bad',
  paused: 'bad',
  in_progress: 'info',
  duplicate_delivery: 'dup',
  duplicate_event: 'dup',
  duplicate_task: 'dup',
  superseded: 'dup',
};

/** A state, decision or outcome class as a badge; its color says good, needs a person, bad, or neutral. */
export function Badge({ value }: { value: string | null }) {
  if (value === null) return <span class="muted">—</span>;
  return <span class={`badge ${TONES[value] ?? 'neutral'}`}>{value.replaceAll('_', ' ')}</span>;
}
