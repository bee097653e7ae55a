/**
 * Zoom's npm library, @zoom/rivet, is not suitable to sign with: 3 MB with axios, dayjs, jose and form-data, under
 * Zoom's own terms of use, and its verifier lives inside an HTTP receiver it starts itself (and checks a
 * re-serialized body, no timestamp). So these tests use the url_validation example of Zoom's "Using webhooks" page,
 * pinned, with the signature and encryptedToken computed by OpenSSL (`openssl dgst -sha256 -hmac`).
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { zoom } from '../../../adapters/zoom.ts';
import { failedCheck, inbound, withHeader } from './fixtures.ts';

const SECRET = 'oncehook-test-secret';
const adapter = zoom.adapter({ secrets: [SECRET] });

// Zoom's example endpoint.url_validation, its event_ts's second as the request timestamp.
const VALIDATION = JSON.stringify({ payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' }, event_ts: 1654503849680, event: 'endpoint.url_validation' });
const VALIDATION_AT = 1654503849;
const PINNED_SIGNATURE = 'v0=ef60cda3d95f080dab9e33d93c36921928fb5dc6158deb890609fd85e0b8850e';
const PINNED_ENCRYPTED_TOKEN = 'd027a8725273d077763b9b232265100e4f1e5f1888f60fd256c6b517750f7f2e';

const MEETING = {
  event: 'meeting.started',
  payload: {
    account_id: 'AAAAAABBBB',
    object: { duration: 0, start_time: '2021-11-02T20:43:19Z', timezone: 'America/Denver', topic: 'My meeting', id: '85746065432', type: 4, uuid: '4444AAAiAAAAAiAiAiiAii==', host_id: 'x1yCzABCDEfg23HiJKl4mN' },
  },
  event_ts: 1635885799302,
};
const MEETING_AT = 1635885800;

function signed(body: string, timestamp: number, options: { secret?: string; now?: number } = {}) {
  const { secret = SECRET, now = timestamp } = options;
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return inbound(
    { 'content-type': 'application/json; charset=utf-8', 'x-zm-request-timestamp': String(timestamp), 'x-zm-signature': signature },
    body,
    new Date(now * 1000),
  );
}

describe('zoom adapter', () => {
  it("answers Zoom's example endpoint.url_validation with its plainToken and encryptedToken, as OpenSSL computes them", () => {
    const request = signed(VALIDATION, VALIDATION_AT);
    expect(request.headers.get('x-zm-signature')).toBe(PINNED_SIGNATURE);
    const identity = adapter.verify(request);
    expect(identity.handshake).toEqual({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({ plainToken: 'qgg8vlvZRS6UYooatFL8Aw', encryptedToken: PINNED_ENCRYPTED_TOKEN }),
    });
    expect(identity.topic).toBe('endpoint.url_validation');
    expect(failedCheck(() => adapter.verify(signed(VALIDATION, VALIDATION_AT, { secret: 'another secret' })))).toBe('signature');
  });

  it('answers a url_validation with the secret that verified it, while a secret is rotated', () => {
    const rotating = zoom.adapter({ secrets: ['the-new-secret-token', SECRET] });
    const { handshake } = rotating.verify(signed(VALIDATION, VALIDATION_AT));
    expect(JSON.parse(handshake!.body).encryptedToken).toBe(PINNED_ENCRYPTED_TOKEN);
    const fromNew = rotating.verify(signed(VALIDATION, VALIDATION_AT, { secret: 'the-new-secret-token' }));
    expect(JSON.parse(fromNew.handshake!.body).encryptedToken).toBe(createHmac('sha256', 'the-new-secret-token').update('qgg8vlvZRS6UYooatFL8Aw').digest('hex'));
  });

  it('names an event by its content, the topic by "event" and the time by event_ts; 3 s to answer', () => {
    const identity = adapter.verify(signed(JSON.stringify(MEETING), MEETING_AT));
    expect(identity).toMatchObject({ topic: 'meeting.started', occurredAt: new Date(1635885799302), json: MEETING });
    expect(identity.eventId).toMatch(/^zoom-[0-9a-f]{32}$/);
    expect(identity.deliveryId).toBe(identity.eventId);
    expect(adapter).toMatchObject({ ackTimeoutMs: 3000, signatureHeaders: ['x-zm-signature'] });
  });

  it('names a retry as the first, though signed at another time and serialized afresh; another event apart', () => {
    const first = adapter.verify(signed(JSON.stringify(MEETING), MEETING_AT)).eventId;
    const reordered = JSON.stringify({ event_ts: MEETING.event_ts, payload: MEETING.payload, event: MEETING.event }, null, 1);
    expect(adapter.verify(signed(reordered, MEETING_AT + 25 * 60)).eventId).toBe(first);
    const ended = adapter.verify(signed(JSON.stringify({ ...MEETING, event: 'meeting.ended' }), MEETING_AT)).eventId;
    const later = adapter.verify(signed(JSON.stringify({ ...MEETING, event_ts: MEETING.event_ts + 1 }), MEETING_AT)).eventId;
    expect(new Set([first, ended, later]).size).toBe(3);
  });

  it("accepts Zoom's last retry, 85 minutes on, and refuses past 90 minutes old or 5 minutes ahead", () => {
    const body = JSON.stringify(MEETING);
    expect(adapter.verify(signed(body, MEETING_AT, { now: MEETING_AT + 85 * 60 })).topic).toBe('meeting.started');
    expect(failedCheck(() => adapter.verify(signed(body, MEETING_AT, { now: MEETING_AT + 90 * 60 + 1 })))).toBe('timestamp');
    expect(adapter.verify(signed(body, MEETING_AT, { now: MEETING_AT - 300 })).topic).toBe('meeting.started');
    expect(failedCheck(() => adapter.verify(signed(body, MEETING_AT, { now: MEETING_AT - 301 })))).toBe('timestamp');
  });

  it('refuses a wrong secret, a changed body, and a missing header, saying which check failed', () => {
    const request = signed(JSON.stringify(MEETING), MEETING_AT);
    expect(failedCheck(() => zoom.adapter({ secrets: ['wrong'] }).verify(request))).toBe('signature');
    const tampered = { ...request, body: new TextEncoder().encode(JSON.stringify({ ...MEETING, event: 'meeting.ended' })) };
    expect(failedCheck(() => adapter.verify(tampered))).toBe('signature');
    expect(failedCheck(() => adapter.verify(withHeader(request, 'x-zm-request-timestamp', String(MEETING_AT + 1))))).toBe('signature');
    for (const name of ['x-zm-signature', 'x-zm-request-timestamp']) {
      expect(failedCheck(() => adapter.verify(withHeader(request, name, null)))).toBe('missing_header');
    }
    expect(failedCheck(() => adapter.verify(withHeader(request, 'x-zm-signature', 'ef60cda3')))).toBe('signature');
  });
});
