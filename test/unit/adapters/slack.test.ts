import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { slack } from '../../../adapters/slack.ts';
import { expectInputError, expectSignatureError, inbound } from './fixtures.ts';

const SECRET = 'slack-signing-secret-for-tests';
const adapter = slack.adapter({ secrets: [SECRET] });

function signed(body: string, at: Date, secret = SECRET) {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return inbound({ 'content-type': 'application/json', 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature }, body, at);
}

const NOW = new Date('2026-12-02T10:00:00Z');
const EVENT = JSON.stringify({ type: 'event_callback', event_id: 'Ev08MFMKH6', event_time: 1764669600, event: { type: 'app_mention', text: 'hi' } });

describe('slack adapter', () => {
  it("verifies the request in Slack's documentation (a slash command), then finds no event in it", () => {
    // https://api.slack.com/authentication/verifying-requests-from-slack, "a walkthrough".
    const body =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const request = inbound(
      { 'x-slack-request-timestamp': '1531420618', 'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503' },
      body,
      new Date(1531420618 * 1000),
    );
    // Past the signature: a slash command is not an Events API callback.
    expectInputError(() => slack.adapter({ secrets: ['8f742231b10e8888abcd99yyyzzz85a5'] }).verify(request), 'malformed_body');
  });

  it('names an event callback by its event_id, which Slack keeps on every retry, and its topic by the inner event', () => {
    expect(adapter.verify(signed(EVENT, NOW))).toEqual({
      deliveryId: 'Ev08MFMKH6',
      eventId: 'Ev08MFMKH6',
      topic: 'app_mention',
      occurredAt: new Date(1764669600 * 1000),
      json: JSON.parse(EVENT),
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 3000, signatureHeaders: ['x-slack-signature'] });
  });

  it('answers url_verification with its challenge once the request verifies', () => {
    const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' });
    const identity = adapter.verify(signed(body, NOW));
    expect(identity.handshake).toEqual({ status: 200, contentType: 'application/json', body: '{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}' });
    expectSignatureError(() => adapter.verify(signed(body, NOW, 'another secret')));
  });

  it('refuses a wrong secret, a timestamp over five minutes off, and a missing signature', () => {
    expect(expectSignatureError(() => adapter.verify(signed(EVENT, NOW, 'wrong')))).toMatch(/does not match/);
    const old = signed(EVENT, new Date(NOW.getTime() - 301_000));
    expect(expectSignatureError(() => adapter.verify({ ...old, now: NOW }))).toMatch(/301 s old/);
    const request = signed(EVENT, NOW);
    request.headers.delete('x-slack-signature');
    expect(expectSignatureError(() => adapter.verify(request))).toMatch(/missing X-Slack-Signature/);
  });
});
