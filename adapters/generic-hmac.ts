/**
 * Any sender that signs with an HMAC, described by the source's `hmac` options: which header, which hash and
 * encoding, what was signed, and where each identity is found (a header, or a JSON pointer into the body).
 */
import { z } from 'zod';
import { SignatureError } from '../src/errors.ts';
import { jsonPointer, jsonPointerSchema, pointerTokens } from '../src/json-pointer.ts';
import { parseJson, parseJsonUnlessDeclaredOther } from './body.ts';
import { isoDate, optionalString, stringOrIntegerId, unixSecondsDate } from './identity.ts';
import { required, sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkTimestamp, hmac, requireSignatureHeader } from './signature.ts';
import type { InboundRequest } from './types.ts';

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

/** The signature of `body`, and of the timestamp before it where the options say the sender signs one. */
function signatureOf(options: GenericHmacOptions, secret: string, timestamp: string | undefined, body: string | Uint8Array): string {
  const signed = options.signedPayload === 'timestamp.body' && timestamp !== undefined ? [`${timestamp}.`, body] : [body];
  return hmac(options.algorithm, secret, options.encoding, ...signed);
}

function verifySignature(request: InboundRequest, secrets: readonly string[], options: GenericHmacOptions): void {
  const value = requireSignatureHeader(request.headers, options.signatureHeader);
  if (!value.startsWith(options.signaturePrefix)) {
    throw new SignatureError(`${options.signatureHeader} must start with "${options.signaturePrefix}"`);
  }
  let timestamp: string | undefined;
  if (options.timestampHeader !== undefined) {
    timestamp = requireSignatureHeader(request.headers, options.timestampHeader);
    checkTimestamp(timestamp, request.now, options.toleranceSeconds, options.timestampHeader);
  }
  const sign = (secret: string) => signatureOf(options, secret, timestamp, request.body);
  const provided = value.slice(options.signaturePrefix.length).trim();
  if (!anySignatureMatches(secrets, sign, [provided], options.encoding)) {
    throw new SignatureError(`${options.signatureHeader} does not match the request under any configured secret`);
  }
}

const NEEDS_OPTIONS = 'the generic-hmac adapter needs its "hmac" options';

function adapter(source: SenderSource<GenericHmacOptions>): SenderAdapter {
  const { secrets } = source;
  const options = required(source.options, 'hmac', NEEDS_OPTIONS);
  const fields = [options.deliveryId, options.eventId, options.topic, options.occurredAt];
  const needsJson = fields.some((field) => field !== undefined && 'pointer' in field);

  return {
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

/** A JSON body with each identity where the options say the sender puts it. */
function sample({ source, asked, eventId, deliveryId, secret, now }: SampleRequest<GenericHmacOptions>): Sample {
  const options = required(source.options, 'hmac', NEEDS_OPTIONS);
  const document: Record<string, unknown> = { data: {} };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const place = (field: FieldSource | undefined, value: string) => {
    if (!field) return;
    if ('header' in field) headers[field.header.toLowerCase()] = value;
    else setPointer(document, field.pointer, value);
  };
  place(options.eventId, eventId);
  place(options.deliveryId, deliveryId);
  place(options.topic, asked.topic ?? 'sample');
  place(options.occurredAt, new Date().toISOString());
  const body = JSON.stringify(document);
  if (options.timestampHeader) headers[options.timestampHeader.toLowerCase()] = String(now);
  headers[options.signatureHeader.toLowerCase()] = options.signaturePrefix + signatureOf(options, secret, String(now), body);
  return { body, headers };
}

function setPointer(document: Record<string, unknown>, pointer: string, value: string): void {
  const keys = pointerTokens(pointer);
  let node = document;
  for (const key of keys.slice(0, -1)) {
    node[key] ??= {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

/** Senders stamp events either as ISO 8601 or as unix seconds. */
function dateFrom(value: unknown): Date | null {
  return isoDate(value) ?? unixSecondsDate(value);
}

export const genericHmac = sender({
  name: 'generic-hmac',
  options: { field: 'hmac', schema: genericHmacSchema, description: 'options of the generic-hmac adapter' },
  needs: { hmac: NEEDS_OPTIONS },
  refusesDeliveryId: ({ options }) =>
    options?.deliveryId
      ? null
      : "this generic-hmac source's hmac names no deliveryId, so its deliveries have no ID apart from their event's (name one in the config to send one)",
  adapter,
  sample,
});
