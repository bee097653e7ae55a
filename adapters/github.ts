/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>` over the raw body. X-GitHub-Delivery is one GUID per event,
 * kept on redelivery and shared by every hook subscribed to the event, so it is the event ID; the hook ID
 * tells those hooks' deliveries apart. A `ping`, sent when a hook is created, only says the hook works.
 */
import { randomUUID } from 'node:crypto';
import { SignatureError } from '../src/errors.ts';
import { decodeUtf8, parseJsonText, parseJsonUnlessDeclaredOther } from './body.ts';
import { optionalString, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, hmac, requireSignatureHeader } from './signature.ts';
import type { InboundRequest } from './types.ts';

const PREFIX = 'sha256=';
const signatureOf = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'hex', body);

function verifySignature(request: InboundRequest, secrets: readonly string[]): void {
  const { headers } = request;
  if (!headers.has('x-hub-signature-256') && headers.has('x-hub-signature')) {
    throw new SignatureError('only the SHA-1 X-Hub-Signature was sent; oncehook checks X-Hub-Signature-256');
  }
  const value = requireSignatureHeader(headers, 'X-Hub-Signature-256');
  if (!value.startsWith(PREFIX)) {
    throw new SignatureError('X-Hub-Signature-256 must look like "sha256=<hex>"');
  }
  const sign = (secret: string) => signatureOf(secret, request.body);
  if (!anySignatureMatches(secrets, sign, [value.slice(PREFIX.length)], 'hex')) {
    throw new SignatureError('X-Hub-Signature-256 does not match the body under any configured webhook secret');
  }
}

/** A hook set to application/x-www-form-urlencoded sends the same JSON as the `payload` field. */
function parseBody(request: InboundRequest): unknown {
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded\b/i.test(contentType)) {
    return parseJsonUnlessDeclaredOther(request.headers, request.body);
  }
  const payload = new URLSearchParams(decodeUtf8(request.body)).get('payload');
  return payload === null ? undefined : parseJsonText(payload);
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 10_000,
    signatureHeaders: ['x-hub-signature-256', 'x-hub-signature'],
    verify(request) {
      verifySignature(request, secrets);
      const { headers } = request;
      const guid = requireId(headers.get('x-github-delivery'), 'X-GitHub-Delivery header');
      const hookId = headers.get('x-github-hook-id')?.trim() || 'unknown-hook';
      const topic = optionalString(headers.get('x-github-event'));
      return {
        deliveryId: requireId(`${hookId}:${guid}`, 'delivery id (hook id : X-GitHub-Delivery)'),
        eventId: guid,
        topic,
        occurredAt: null,
        json: parseBody(request),
        informational: topic === 'ping',
      };
    },
  };
}

function sample({ asked, secret }: SampleRequest): Sample {
  const body = JSON.stringify({ action: 'opened', issue: { number: 1 } });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': PREFIX + signatureOf(secret, body),
      'x-github-delivery': asked.eventId ?? randomUUID(),
      'x-github-hook-id': asked.deliveryId ?? '1',
      'x-github-event': asked.topic ?? 'issues',
    },
  };
}

export const github = sender({ name: 'github', adapter, sample });
