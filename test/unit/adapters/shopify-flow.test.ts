import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { shopifyFlow } from '../../../adapters/shopify-flow.ts';
import {
  FLOW_BODY,
  SHOPIFY_SECRET,
  expectInputError,
  expectSignatureError,
  flowRequest,
  withAlteredByte,
  withHeader,
  withOddCaseHeaderNames,
} from './fixtures.ts';

const adapter = shopifyFlow.adapter({ secrets: [SHOPIFY_SECRET] });
const RUN_ID = 'bb8db4ea-9ab6-4b2a-bf5b-d2d41b8bbd4e';
const flowBody = (fields: Record<string, unknown>) => JSON.stringify({ ...JSON.parse(FLOW_BODY), ...fields });

describe('shopify-flow adapter', () => {
  it('accepts a signed action request: the run ID is the event, a hash of the bytes the delivery', () => {
    const expectedDelivery = `flow-${createHash('sha256').update(FLOW_BODY).digest('hex').slice(0, 32)}`;
    expect(adapter.verify(flowRequest())).toEqual({
      deliveryId: expectedDelivery,
      eventId: RUN_ID,
      topic: 'send-to-crm',
      occurredAt: null,
      json: JSON.parse(FLOW_BODY),
    });
    expect(adapter).toMatchObject({ name: 'shopify-flow', ackTimeoutMs: 10_000 });
  });

  it('names an identical resend (after Flow\'s 10 s timeout) the same delivery', () => {
    expect(adapter.verify(flowRequest()).deliveryId).toBe(adapter.verify(flowRequest()).deliveryId);
  });

  it('gives a different body with the same run ID the same event but another delivery', () => {
    const other = adapter.verify(flowRequest({ body: flowBody({ properties: { customer_id: 'gid://shopify/Customer/2' } }) }));
    const first = adapter.verify(flowRequest());
    expect(other.eventId).toBe(first.eventId);
    expect(other.deliveryId).not.toBe(first.deliveryId);
  });

  it('accepts header names in any case', () => {
    expect(adapter.verify(withOddCaseHeaderNames(flowRequest())).eventId).toBe(RUN_ID);
  });

  it('accepts either secret while one is rotated', () => {
    const rotating = shopifyFlow.adapter({ secrets: ['old-secret', 'new-secret'] });
    expect(rotating.verify(flowRequest({ secret: 'new-secret' })).eventId).toBe(RUN_ID);
    expect(rotating.verify(flowRequest({ secret: 'old-secret' })).eventId).toBe(RUN_ID);
  });

  it('refuses a request signed with another secret', () => {
    expectSignatureError(() => adapter.verify(flowRequest({ secret: 'someone-else' })));
  });

  it('refuses a request without the signature header', () => {
    expectSignatureError(() => adapter.verify(withHeader(flowRequest(), 'X-Shopify-Hmac-Sha256', null)));
  });

  it('refuses a body altered by one byte', () => {
    expectSignatureError(() => adapter.verify(withAlteredByte(flowRequest())));
  });

  it('refuses a signed body that is not JSON with 400', () => {
    expectInputError(() => adapter.verify(flowRequest({ body: 'action_run_id=1' })), 'malformed_body');
  });

  it('refuses a verified request without action_run_id with 400 naming it', () => {
    const message = expectInputError(
      () => adapter.verify(flowRequest({ body: flowBody({ action_run_id: undefined }) })),
      'missing_identity',
    );
    expect(message).toMatch(/action_run_id/);
  });

  it('refuses an action_run_id that is not a string, saying what it is', () => {
    const message = expectInputError(() => adapter.verify(flowRequest({ body: flowBody({ action_run_id: { id: 1 } }) })), 'invalid_identity');
    expect(message).toBe('the action_run_id in the body is an object, not a string');
  });

  it('leaves the topic null when handle is not a string', () => {
    expect(adapter.verify(flowRequest({ body: flowBody({ handle: 7 }) })).topic).toBeNull();
  });
});
