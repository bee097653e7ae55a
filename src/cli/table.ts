/** Plain-text output for people: aligned columns, relative ages, long values cut with an ellipsis. */

export function table(headers: string[], rows: (string | number | null | undefined)[][], maxWidth = 60): string {
  const cells = rows.map((row) => row.map((cell) => cut(cell === null || cell === undefined ? '—' : String(cell), maxWidth)));
  const widths = headers.map((header, i) => Math.max(header.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
}

/** `key  value` lines, keys aligned. */
export function fields(entries: [string, string | number | null | undefined][]): string {
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${key.padEnd(width)}  ${value === null || value === undefined ? '—' : value}`).join('\n');
}

export function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** "4s", "12m", "3h", "2d": how long ago, coarse enough to read at a glance. */
export function age(at: string | Date | null | undefined, now = Date.now()): string {
  if (!at) return '—';
  const seconds = Math.max(0, Math.round((now - new Date(at).getTime()) / 1000));
  return seconds < 120 ? `${seconds}s` : seconds < 7200 ? `${Math.round(seconds / 60)}m` : seconds < 172_800 ? `${Math.round(seconds / 3600)}h` : `${Math.round(seconds / 86_400)}d`;
}

export function seconds(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : age(new Date(Date.now() - value * 1000));
}
