import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { matchFilter, type Filter } from '../../../src/shape/filter.ts';
import { REPO } from '../../support/process.ts';
import { shopifyOrder } from '../../support/shopify-order.ts';

// The filters the docs show, read from the pages as written and run on Shopify orders as Shopify sends them: money
// as strings. Each expectation is keyed by the example's text, so an example changed in the docs fails here
// until its expectation is written again.

/** The JSON examples under docs/actions.md's filter section, one a line. */
function actionsExamples(): string[] {
  const page = readFileSync(join(REPO, 'docs/actions.md'), 'utf8');
  const section = page.slice(page.indexOf('## Which deliveries: `filter`'));
  const block = /```json\n([\s\S]*?)```/.exec(section)![1]!;
  return block.trim().split('\n');
}

/** The filter of the README's "An action that calls an API" example. */
function readmeFilter(): Filter {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const line = /^\s*"filter": (\{.*\}),$/m.exec(readme)![1]!;
  return JSON.parse(line) as Filter;
}

const big = { body: shopifyOrder(), headers: { 'x-shopify-shop-domain': 'acme.myshopify.com' }, topic: 'orders/create' };
const small = {
  body: shopifyOrder({ total_price: '45.00', tags: '', email: 'ann@example.org', line_items: [{ sku: 'CASE-1', quantity: 1, price: '45.00' }] }),
  headers: { 'x-shopify-shop-domain': 'other.myshopify.com' },
  topic: 'orders/cancelled',
};

// Each docs example: what it says of the big order (250.00, 1 + 3 items, tagged vip) and of the small one.
const expected: Record<string, [big: string | null, small: string | null]> = {
  '{ "body": { "total_price": { "$gte": 100 } } }': [null, 'body.total_price: "45.00" is not >= 100'],
  '{ "body": { "line_items": { "quantity": { "$gte": 2 } } } }': [null, 'body.line_items[].quantity: 1 is not >= 2'],
  '{ "body": { "$or": [ { "email": { "$endsWith": "@vip.example" } }, { "tags": { "$contains": "vip" } } ] } }': [
    null,
    'body: none of $or matched (body.email: "ann@example.org" does not end with "@vip.example")',
  ],
  '{ "headers": { "x-shopify-shop-domain": "acme.myshopify.com" } }': [null, 'headers.x-shopify-shop-domain: "other.myshopify.com" is not "acme.myshopify.com"'],
  '{ "topic": { "$in": ["orders/create", "orders/paid"] } }': [null, 'topic: "orders/cancelled" is not one of ["orders/create","orders/paid"]'],
};

describe('the docs\' filter examples on Shopify orders', () => {
  it('docs/actions.md shows exactly the examples this test knows', () => {
    expect(actionsExamples()).toEqual(Object.keys(expected));
  });

  it.each(Object.entries(expected))('%s', (example, [onBig, onSmall]) => {
    const filter = JSON.parse(example) as Filter;
    expect(matchFilter(filter, big)).toBe(onBig);
    expect(matchFilter(filter, small)).toBe(onSmall);
  });

  it('the README\'s API example keeps orders with an email and two of an item', () => {
    const filter = readmeFilter();
    expect(matchFilter(filter, big)).toBeNull();
    expect(matchFilter(filter, small)).toBe('body.line_items[].quantity: 1 is not >= 2');
  });
});
