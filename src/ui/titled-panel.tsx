import type { Child } from 'hono/jsx';
import { Table, type Heading } from './table.tsx';

/** A part of a page: its heading, and the panel that holds it. */
export function TitledPanel({ title, children }: { title: string; children?: Child }) {
  return (
    <>
      <h2>{title}</h2>
      <div class="panel">{children}</div>
    </>
  );
}

/** A titled table, one row an item; a page leaves out the whole part when it has no item to show. */
export function TablePanel<Item>({ title, head, items, row }: { title: string; head?: readonly Heading[]; items: readonly Item[]; row: (item: Item) => Child }) {
  if (items.length === 0) return null;
  return (
    <TitledPanel title={title}>
      <Table head={head}>{items.map(row)}</Table>
    </TitledPanel>
  );
}
