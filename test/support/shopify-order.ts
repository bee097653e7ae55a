/**
 * An `orders/create` body as Shopify sends it, cut to the fields the docs' examples read, with their types as
 * Shopify writes them: money as strings ("250.00"), quantities and IDs as numbers, tags as one comma-separated
 * string. Shape from Shopify's Admin REST Order resource.
 */
export function shopifyOrder(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 5_842_318_082_359,
    admin_graphql_api_id: 'gid://shopify/Order/5842318082359',
    name: '#1001',
    email: 'bob@example.com',
    created_at: '2026-12-07T09:15:02-05:00',
    updated_at: '2026-12-07T09:15:04-05:00',
    currency: 'EUR',
    financial_status: 'paid',
    total_price: '250.00',
    subtotal_price: '240.00',
    total_tax: '39.92',
    tags: 'vip, b2b',
    customer: { id: 7_193_382_060_343, email: 'bob@example.com', first_name: 'Bob', last_name: 'Norman' },
    line_items: [
      { id: 13_842_112_905_527, sku: 'IPOD-342-N', quantity: 1, price: '199.00', title: 'IPod Nano - 8GB' },
      { id: 13_842_112_938_295, sku: 'CASE-1', quantity: 3, price: '13.67', title: 'Case' },
    ],
    ...overrides,
  };
}
