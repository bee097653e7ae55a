import type { Child } from 'hono/jsx';

/** One term of a page's `<dl class="facts">` and what it says. */
export function Fact({ term, children }: { term: string; children?: Child }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </>
  );
}
