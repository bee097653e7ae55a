import { sign } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { github } from '../../../adapters/github.ts';
import {
  GITHUB_BODY,
  GITHUB_IDS,
  GITHUB_SECRET,
  expectInputError,
  expectSignatureError,
  githubRequest,
  inbound,
  withAlteredByte,
  withHeader,
  withOddCaseHeaderNames,
} from './fixtures.ts';

const adapter = github.adapter({ secrets: [GITHUB_SECRET] });

describe('github adapter', () => {
  it('accepts the delivery signed in GitHub\'s documentation, as octokit signs it', async () => {
    const secret = "It's a Secret to Everybody";
    const signature = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(await sign(secret, 'Hello, World!')).toBe(signature);
    const request = inbound(
      { 'Content-Type': 'text/plain', 'X-Hub-Signature-256': signature, 'X-GitHub-Delivery': GITHUB_IDS.delivery },
      'Hello, World!',
    );
    expect(github.adapter({ secrets: [secret] }).verify(request)).toMatchObject({ eventId: GITHUB_IDS.delivery, json: undefined });
  });

  it('accepts a signed delivery: the GUID is the event, hook and GUID together the delivery', async () => {
    expect(adapter.verify(await githubRequest())).toEqual({
      deliveryId: `${GITHUB_IDS.hookId}:${GITHUB_IDS.delivery}`,
      eventId: GITHUB_IDS.delivery,
      topic: 'issues',
      occurredAt: null,
      json: JSON.parse(GITHUB_BODY),
      informational: false,
    });
    expect(adapter).toMatchObject({ name: 'github', ackTimeoutMs: 10_000 });
    expect(adapter.signatureHeaders).toContain('x-hub-signature-256');
  });

  it('marks a ping, sent when a hook is created, as informational: it is no event', async () => {
    const ping = withHeader(await githubRequest({ body: '{"zen":"Design for failure.","hook_id":292430182}' }), 'X-GitHub-Event', 'ping');
    expect(adapter.verify(ping)).toMatchObject({ eventId: GITHUB_IDS.delivery, topic: 'ping', informational: true });
  });

  it('names the delivery unknown-hook:<GUID> when the hook ID header is absent', async () => {
    const request = withHeader(await githubRequest(), 'X-GitHub-Hook-ID', null);
    expect(adapter.verify(request).deliveryId).toBe(`unknown-hook:${GITHUB_IDS.delivery}`);
  });

  it('reads the JSON of a hook set to form encoding from its payload field', async () => {
    const body = `payload=${encodeURIComponent(GITHUB_BODY)}`;
    const request = await githubRequest({ body, contentType: 'application/x-www-form-urlencoded' });
    expect(adapter.verify(request).json).toEqual(JSON.parse(GITHUB_BODY));
  });

  it('accepts header names in any case', async () => {
    expect(adapter.verify(withOddCaseHeaderNames(await githubRequest())).eventId).toBe(GITHUB_IDS.delivery);
  });

  it('accepts an uppercase hex signature', async () => {
    const request = await githubRequest();
    const upper = `sha256=${request.headers.get('x-hub-signature-256')?.slice('sha256='.length).toUpperCase()}`;
    expect(adapter.verify(withHeader(request, 'X-Hub-Signature-256', upper)).eventId).toBe(GITHUB_IDS.delivery);
  });

  it('accepts either secret while one is rotated', async () => {
    const rotating = github.adapter({ secrets: ['old-secret', 'new-secret'] });
    expect(rotating.verify(await githubRequest({ secret: 'new-secret' })).eventId).toBe(GITHUB_IDS.delivery);
    expect(rotating.verify(await githubRequest({ secret: 'old-secret' })).eventId).toBe(GITHUB_IDS.delivery);
  });

  it('refuses a delivery signed with another secret', async () => {
    const request = await githubRequest({ secret: 'someone-else' });
    expect(expectSignatureError(() => adapter.verify(request))).not.toContain(GITHUB_SECRET);
  });

  it('refuses a delivery without X-Hub-Signature-256', async () => {
    const request = withHeader(await githubRequest(), 'X-Hub-Signature-256', null);
    expect(expectSignatureError(() => adapter.verify(request))).toMatch(/missing X-Hub-Signature-256/);
  });

  it('tells a sender that only sent the SHA-1 header what is missing', async () => {
    const request = withHeader(
      withHeader(await githubRequest(), 'X-Hub-Signature-256', null),
      'X-Hub-Signature',
      'sha1=0000000000000000000000000000000000000000',
    );
    expect(expectSignatureError(() => adapter.verify(request))).toMatch(/X-Hub-Signature-256/);
  });

  it('refuses a signature without the sha256= prefix', async () => {
    const request = await githubRequest();
    const bare = request.headers.get('x-hub-signature-256')?.slice('sha256='.length) ?? '';
    expectSignatureError(() => adapter.verify(withHeader(request, 'X-Hub-Signature-256', bare)));
  });

  it('refuses a body altered by one byte', async () => {
    const request = withAlteredByte(await githubRequest());
    expectSignatureError(() => adapter.verify(request));
  });

  it('refuses a signed body that is not the JSON it declares with 400', async () => {
    const request = await githubRequest({ body: '{"action": ' });
    expectInputError(() => adapter.verify(request), 'malformed_body');
  });

  it('refuses a verified delivery without X-GitHub-Delivery with 400 naming it', async () => {
    const request = withHeader(await githubRequest(), 'X-GitHub-Delivery', null);
    expect(expectInputError(() => adapter.verify(request), 'missing_identity')).toMatch(/X-GitHub-Delivery/);
  });
});
