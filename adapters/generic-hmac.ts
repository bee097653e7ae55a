/**
 * Any sender that signs with an HMAC, described by the source's `hmac` options: which header, which hash and
 * encoding, what was signed, and where each identity is found (a header, or a JSON pointer into the body).
 */
import { z } from 'zod';
import { SignatureError } from '../src/errors.ts';
import { jsonPointerSchema } from '../src/json-pointer.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson, parseJsonUnlessDeclaredOther } from './body.ts';
import { isoDate, optionalString, stringOrIntegerId, unixSecondsDate } from './identity.ts';
import { anySignatureMatches, checkTimestamp, hmac, requireSignatureHeader } from './signature.ts';
import type { Adapter, InboundRequest } from './types.ts';

/** Where generic-hmac finds one identity: a request header or a JSON pointer into the body. */
const fieldSource = z.union([
  z.strictObject({ header: z.string().min(1) }),
  z.strictObject({ pointer: jsonPointerSchema }),
]);

export const genericHmacSchema = z
  .strictObject({
    signatureHeader: z.string().min(1).describe('header carrying the signature, e.g. "X-Signature"'),
    algorithm: z.enum(['sha1', 'sha256', 'sha512']).default('sha256'),
    encoding: z.enum(['hex', 'base64']).default('hex'),
    signaturePrefix: z.string().default('').describe('text before the signature, e.g. "sha256="'),
    timestampHeader: z.string().min(1).optional().describe('header with a unix timestamp in seconds'),
    toleranceSeconds: z.int().positive().default(300),
    signedPayload: z
      .enum(['body', 'timestamp.body'])
      .default('body')
      .describe('what was signed: the raw body, or "<timestamp>.<body>"'),
    deliveryId: fieldSource.optional().describe('default: the event ID, so a retry of the event is a duplicate delivery'),
    eventId: fieldSource,
    topic: fieldSource.optional(),
    occurredAt: fieldSource.optional(),
  })
  .refine((o) => o.signedPayload === 'body' || o.timestampHeader !== undefined, {
    message: 'signedPayload "timestamp.body" needs a timestampHeader',
    path: ['signedPayload'],
  })
  // Outside the signature the timestamp can be rewritten by whoever replays a delivery: a window that stops no replay.
  .refine((o) => o.timestampHeader === undefined || o.signedPayload === 'timestamp.body', {
    message: 'the timestamp is not signed (signedPayload "body"), so a replay can rewrite it and pass the window: set signedPayload "timestamp.body" if the sender signs it, else drop timestampHeader',
    path: ['timestampHeader'],
  });
export type GenericHmacOptions = z.output<typeof genericHmacSchema>;

type FieldSource = GenericHmacOptions['eventId'];

function fieldName(source: FieldSource): string {
  return 'header' in source ? `${source.header} header` : `body field ${source.pointer}`;
}

function verifySignature(request: InboundRequest, secrets: readonly string[], options: GenericHmacOptions): void {
  const value = requireSignatureHeader(request.headers, options.signatureHeader);
  if (!value.startsWith(options.signaturePrefix)) {
    throw new SignatureError(`${options.signatureHeader} must start with "${options.signaturePrefix}"`);
  }
  const signed: (string | Uint8Array)[] = [request.body];
  if (options.timestampHeader !== undefined) {
    const timestamp = requireSignatureHeader(request.headers, options.timestampHeader);
    checkTimestamp(timestamp, request.now, options.toleranceSeconds, options.timestampHeader);
    if (options.signedPayload === 'timestamp.body') signed.unshift(`${timestamp}.`);
  }
  const sign = (secret: string) => hmac(options.algorithm, secret, options.encoding, ...signed);
  const provided = value.slice(options.signaturePrefix.length).trim();
  if (!anySignatureMatches(secrets, sign, [provided], options.encoding)) {
    throw new SignatureError(`${options.signatureHeader} does not match the request under any configured secret`);
  }
}

export function genericHmac(settings: { secrets: readonly string[]; hmac: GenericHmacOptions }): Adapter {
  const { secrets, hmac: options } = settings;
  const fields = [options.deliveryId, options.eventId, options.topic, options.occurredAt];
  const needsJson = fields.some((field) => field !== undefined && 'pointer' in field);

  return {
    name: 'generic-hmac',
    ackTimeoutMs: 10_000,
    signatureHeaders: [options.signatureHeader.toLowerCase()],
    verify(request) {
      verifySignature(request, secrets, options);
      const json = needsJson ? parseJson(request.body) : parseJsonUnlessDeclaredOther(request.headers, request.body);
      // An absent header reads as a pointer that finds nothing does: undefined, which an ID is told is missing.
      const read = (source: FieldSource): unknown =>
        'header' in source ? (request.headers.get(source.header) ?? undefined) : jsonPointer(json, source.pointer);
      const id = (source: FieldSource): string => stringOrIntegerId(read(source), fieldName(source));
      const eventId = id(options.eventId);

      return {
        // Without a delivery ID the event names it: stable across retries (a signature is not, once a timestamp
        // is signed), and never shared by two events (a body hash would be, for two events with equal bodies).
        deliveryId: options.deliveryId ? id(options.deliveryId) : eventId,
        eventId,
        topic: options.topic ? optionalString(read(options.topic)) : null,
        occurredAt: options.occurredAt ? dateFrom(read(options.occurredAt)) : null,
        json,
      };
    },
  };
}

/** Senders stamp events either as ISO 8601 or as unix seconds. */
function dateFrom(value: unknown): Date | null {
  return isoDate(value) ?? unixSecondsDate(value);
}
