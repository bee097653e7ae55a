import { describe, expect, it } from 'vitest';
import { catalogDifferences, copyOrder, type Table } from '../../../src/store/copy/catalog.ts';
import { standing } from '../../../src/store/copy/versions.ts';

const table = (name: string, references: string[] = [], columns = 'id text'): Table => ({
  name,
  columns: columns.split(', ').map((c) => {
    const [column, type] = c.split(' ');
    return { name: column!, type: type!, xid8: type === 'xid8' };
  }),
  primaryKey: ['id'],
  references,
});

describe('standing: a database beside this build, by the migrations each has', () => {
  it.each([
    { applied: [1, 2, 3], known: [1, 2, 3], is: 'same' },
    { applied: [], known: [1, 2, 3], is: 'older' },
    { applied: [1, 2], known: [1, 2, 3], is: 'older' },
    { applied: [1, 2, 3, 4], known: [1, 2, 3], is: 'newer' },
    { applied: [1, 5, 3], known: [1, 2, 3], is: 'different' },
    { applied: [1, 5], known: [1, 2, 3], is: 'different' },
  ])('$applied against $known: $is', ({ applied, known, is }) => {
    expect(standing(applied, known)).toBe(is);
  });
});

describe('copyOrder: every table a foreign key points at goes in first', () => {
  it('by name where no key orders them', () => {
    expect(copyOrder([table('tasks'), table('attempts'), table('deliveries')]).map((t) => t.name)).toEqual(['attempts', 'deliveries', 'tasks']);
  });

  it('parents before children, through chains', () => {
    const tables = [table('attempts', ['tasks']), table('tasks', ['deliveries']), table('deliveries'), table('alerts')];
    expect(copyOrder(tables).map((t) => t.name)).toEqual(['alerts', 'deliveries', 'tasks', 'attempts']);
  });

  it('refuses a cycle, which no order fills', () => {
    expect(() => copyOrder([table('a', ['b']), table('b', ['a'])])).toThrow(/cycle/);
  });
});

describe('catalogDifferences: the source and target tables must match column for column', () => {
  it('none for the same tables', () => {
    expect(catalogDifferences([table('tasks', [], 'id text, txid xid8')], [table('tasks', [], 'id text, txid xid8')])).toEqual([]);
  });

  it('names a table on one side only, and a column that differs', () => {
    expect(
      catalogDifferences([table('tasks', [], 'id text, n integer'), table('old')], [table('tasks', [], 'id text, n bigint'), table('new')]),
    ).toEqual([
      'tasks has (id text, n integer) in the data directory, (id text, n bigint) in the target',
      'old is in the data directory only',
      'new is in the target only',
    ]);
  });

  it('names a table without a primary key, which cannot be paged', () => {
    expect(catalogDifferences([{ ...table('log'), primaryKey: [] }], [table('log')])).toEqual(['log has no primary key to page by']);
  });
});
