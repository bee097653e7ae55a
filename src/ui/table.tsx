import type { Child } from 'hono/jsx';

/** A column heading; a numeric column is right-aligned, heading and cells alike. */
export type Heading = string | { num: string };

/** A numeric column's heading. */
export const num = (text: string): Heading => ({ num: text });

/** A table with one heading row (none when `head` is left out) and the rows it is given. */
export function Table({ head, class: kind, children }: { head?: readonly Heading[]; class?: string; children?: Child }) {
  return (
    <table class={kind}>
      {head ? (
        <thead>
          <tr>{head.map((h) => (typeof h === 'string' ? <th>{h}</th> : <th class="num">{h.num}</th>))}</tr>
        </thead>
      ) : null}
      <tbody>{children}</tbody>
    </table>
  );
}
