import { EventWebhook } from '@sendgrid/eventwebhook';
import { describe, expect, it } from 'vitest';
import { sendgrid } from '../../../adapters/sendgrid.ts';
import { sendgridSigner } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound } from './fixtures.ts';

// @sendgrid/eventwebhook's own test vector.
const PUBLISHED = {
  key: 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==',
  signature: 'MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=',
  timestamp: '1600112502',
  body:
    JSON.stringify([
      {
        email: 'hello@world.com',
        event: 'dropped',
        reason: 'Bounced Address',
        sg_event_id: 'ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA',
        sg_message_id: 'LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0',
        'smtp-id': '<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>',
        timestamp: 1600112492,
      },
    ]) + '\r\n',
};

const request = (body: string, signature: string, timestamp: string) =>
  inbound({ 'x-twilio-email-event-webhook-signature': signature, 'x-twilio-email-event-webhook-timestamp': timestamp }, body);

describe('sendgrid adapter', () => {
  it("verifies SendGrid's published example, and makes one event per item", () => {
    const identity = sendgrid.adapter({ secrets: [PUBLISHED.key] }).verify(request(PUBLISHED.body, PUBLISHED.signature, PUBLISHED.timestamp));
    expect(identity.items).toHaveLength(1);
    expect(identity.items![0]).toMatchObject({
      deliveryId: 'ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA',
      eventId: 'ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA',
      topic: 'dropped',
      occurredAt: new Date(1600112492 * 1000),
    });
    expect(JSON.parse(Buffer.from(identity.items![0]!.body).toString())).toMatchObject({ email: 'hello@world.com' });
  });

  it("accepts what SendGrid's own verifier accepts, and nothing it refuses", () => {
    const signer = sendgridSigner();
    const body = JSON.stringify([
      { email: 'a@example.com', event: 'delivered', sg_event_id: 'ev-1', timestamp: 1764669600 },
      { email: 'b@example.com', event: 'open', sg_event_id: 'ev-2', timestamp: 1764669601 },
    ]);
    const signature = signer.sign(body, '1764669602');
    const library = new EventWebhook();
    expect(library.verifySignature(library.convertPublicKeyToECDSA(`-----BEGIN PUBLIC KEY-----\n${signer.key}\n-----END PUBLIC KEY-----`), body, signature, '1764669602')).toBe(true);
    const adapter = sendgrid.adapter({ secrets: [PUBLISHED.key, signer.key] });
    expect(adapter.verify(request(body, signature, '1764669602')).items!.map((item) => item.eventId)).toEqual(['ev-1', 'ev-2']);
    expectSignatureError(() => adapter.verify(request(body, signature, '1764669603')));
    expectSignatureError(() => adapter.verify(request(`${body} `, signature, '1764669602')));
    expectSignatureError(() => sendgrid.adapter({ secrets: [PUBLISHED.key] }).verify(request(body, signature, '1764669602')));
  });

  it('refuses a body that is not a list of events, and an event without its id', () => {
    const signer = sendgridSigner();
    const adapter = sendgrid.adapter({ secrets: [signer.key] });
    for (const body of ['{}', '[]']) expectInputError(() => adapter.verify(request(body, signer.sign(body, '1'), '1')), 'malformed_body');
    const noId = JSON.stringify([{ event: 'open' }]);
    expectInputError(() => adapter.verify(request(noId, signer.sign(noId, '1'), '1')), 'missing_identity');
  });
});
