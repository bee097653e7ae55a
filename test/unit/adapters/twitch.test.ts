/**
 * Twitch publishes no signing library on npm (its own signer is the Go twitch-cli), so these tests use the example
 * messages of Twitch's "Handling Webhook Events" page, pinned, with a signature computed by OpenSSL
 * (`openssl dgst -sha256 -hmac`) over the documented message: ID + timestamp + body.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { twitch } from '../../../adapters/twitch.ts';
import { expectInputError, expectSignatureError, failedCheck, inbound, withHeader } from './fixtures.ts';

const SECRET = 'oncehook-test-secret';
const adapter = twitch.adapter({ secrets: ['an-older-secret-still-configured', SECRET] });

// Twitch's example: its subscription, event, message ID and timestamp.
const SUBSCRIPTION = {
  id: 'f1c2a387-161a-49f9-a165-0f21d7a4e1c4',
  status: 'enabled',
  type: 'channel.follow',
  version: '1',
  cost: 1,
  condition: { broadcaster_user_id: '12826' },
  transport: { method: 'webhook', callback: 'https://example.com/webhooks/callback' },
  created_at: '2019-11-16T10:11:12.634234626Z',
};
const EVENT = {
  user_id: '1337',
  user_login: 'awesome_user',
  user_name: 'Awesome_User',
  broadcaster_user_id: '12826',
  broadcaster_user_login: 'twitch',
  broadcaster_user_name: 'Twitch',
  followed_at: '2020-07-15T18:16:11.17106713Z',
};
const MESSAGE_ID = 'e76c6bd4-55c9-4987-8304-da1588d8988b';
const SENT = '2019-11-16T10:11:12.634234626Z';
const AT = new Date('2019-11-16T10:11:30Z');
const PINNED_SIGNATURE = 'sha256=3759f80bb897fcc4dfb85d04ae27381e075790070648b6986118cbeed52736dd';

type MessageType = 'notification' | 'webhook_callback_verification' | 'revocation';

function message(type: MessageType, payload: object, options: { secret?: string; id?: string; sent?: string; now?: Date } = {}) {
  const { secret = SECRET, id = MESSAGE_ID, sent = SENT, now = AT } = options;
  const body = JSON.stringify(payload);
  return inbound(
    {
      'content-type': 'application/json',
      'twitch-eventsub-message-id': id,
      'twitch-eventsub-message-retry': '0',
      'twitch-eventsub-message-type': type,
      'twitch-eventsub-message-timestamp': sent,
      'twitch-eventsub-subscription-type': 'channel.follow',
      'twitch-eventsub-subscription-version': '1',
      'twitch-eventsub-message-signature': `sha256=${createHmac('sha256', secret).update(id + sent + body).digest('hex')}`,
    },
    body,
    now,
  );
}

const notification = (options?: Parameters<typeof message>[2]) => message('notification', { subscription: SUBSCRIPTION, event: EVENT }, options);

describe('twitch adapter', () => {
  it("verifies Twitch's example notification, signed as OpenSSL computes it", () => {
    const request = notification();
    expect(request.headers.get('twitch-eventsub-message-signature')).toBe(PINNED_SIGNATURE);
    expect(adapter.verify(request)).toEqual({
      deliveryId: MESSAGE_ID,
      eventId: MESSAGE_ID,
      topic: 'channel.follow',
      occurredAt: new Date('2019-11-16T10:11:12.634Z'),
      json: { subscription: SUBSCRIPTION, event: EVENT },
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 10_000, signatureHeaders: ['twitch-eventsub-message-signature'] });
  });

  it('names a resent message as the first (same message ID), and another message apart even with the same event.id', () => {
    const resent = notification({ sent: '2019-11-16T10:13:00.1Z', now: new Date('2019-11-16T10:13:01Z') });
    expect(adapter.verify(resent).eventId).toBe(MESSAGE_ID);
    // Two progress updates of one poll share event.id: two events, not one.
    const progress = (id: string, votes: number) =>
      message('notification', { subscription: { ...SUBSCRIPTION, type: 'channel.poll.progress' }, event: { id: 'poll-1', votes } }, { id });
    expect([adapter.verify(progress('m-1', 3)).eventId, adapter.verify(progress('m-2', 5)).eventId]).toEqual(['m-1', 'm-2']);
  });

  it('answers webhook_callback_verification with the bare challenge as text/plain, once verified', () => {
    const payload = { challenge: 'pogchamp-kappa-360noscope-vohiyo', subscription: { ...SUBSCRIPTION, status: 'webhook_callback_verification_pending' } };
    const identity = adapter.verify(message('webhook_callback_verification', payload));
    expect(identity.handshake).toEqual({ status: 200, contentType: 'text/plain', body: 'pogchamp-kappa-360noscope-vohiyo' });
    expect(failedCheck(() => adapter.verify(message('webhook_callback_verification', payload, { secret: 'not-the-secret' })))).toBe('signature');
  });

  it('records a revocation as informational: it makes no task', () => {
    const payload = { subscription: { ...SUBSCRIPTION, status: 'authorization_revoked' } };
    expect(adapter.verify(message('revocation', payload))).toMatchObject({ eventId: MESSAGE_ID, topic: 'channel.follow', informational: true });
  });

  it('refuses a message type the signed body does not bear out: the type header is not signed', () => {
    const request = withHeader(notification(), 'twitch-eventsub-message-type', 'revocation');
    expect(expectInputError(() => adapter.verify(request), 'malformed_body')).toMatch(/carries an event/);
    expectInputError(() => adapter.verify(withHeader(notification(), 'twitch-eventsub-message-type', 'webhook_callback_verification')), 'malformed_body');
    const revocation = message('revocation', { subscription: SUBSCRIPTION });
    expectInputError(() => adapter.verify(withHeader(revocation, 'twitch-eventsub-message-type', 'notification')), 'malformed_body');
  });

  it('refuses a wrong secret, a timestamp over 10 minutes off either way, and a missing header, saying which check failed', () => {
    expect(expectSignatureError(() => twitch.adapter({ secrets: ['wrong-secret-0123'] }).verify(notification()))).toMatch(/does not match/);
    expect(failedCheck(() => twitch.adapter({ secrets: ['wrong-secret-0123'] }).verify(notification()))).toBe('signature');
    const tenMinutes = 600_000;
    const sentMs = Date.parse(SENT);
    expect(adapter.verify(notification({ now: new Date(sentMs + tenMinutes) })).eventId).toBe(MESSAGE_ID);
    const old = () => adapter.verify(notification({ now: new Date(sentMs + tenMinutes + 1000) }));
    expect([failedCheck(old), expectSignatureError(old)]).toEqual(['timestamp', expect.stringMatching(/601 s old, more than the 600 s/)]);
    expect(failedCheck(() => adapter.verify(notification({ now: new Date(sentMs - tenMinutes - 1000) })))).toBe('timestamp');
    // Unix seconds are not what Twitch sends; they are refused as a timestamp, not guessed at.
    expect(failedCheck(() => adapter.verify(notification({ sent: '1573899072' })))).toBe('timestamp');
    for (const name of ['twitch-eventsub-message-signature', 'twitch-eventsub-message-id', 'twitch-eventsub-message-timestamp', 'twitch-eventsub-message-type']) {
      expect(failedCheck(() => adapter.verify(withHeader(notification(), name, null)))).toBe('missing_header');
    }
  });

  it('refuses a body or an ID changed after signing', () => {
    const request = notification();
    const tampered = { ...request, body: new TextEncoder().encode(new TextDecoder().decode(request.body).replace('1337', '1338')) };
    expect(failedCheck(() => adapter.verify(tampered))).toBe('signature');
    expect(failedCheck(() => adapter.verify(withHeader(request, 'twitch-eventsub-message-id', 'another-id')))).toBe('signature');
  });
});
