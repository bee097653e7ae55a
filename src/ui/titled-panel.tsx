import type { Child } from 'hono/jsx';

/** A part of a page: its heading, and the panel that holds it. */
export function TitledPanel({ title, children }: { title: string; children?: Child }) {
  return (
    <>
      <h2>{title}</h2>
      <div class="panel">{children}</div>
    </>
  );
}
