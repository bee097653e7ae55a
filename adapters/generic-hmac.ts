/**
 * Any sender that signs with an HMAC, described by the source's `hmac` options: which header, which hash and
 * encoding, what was signed, and where each identity is found (a header, or a JSON pointer into the body).
 */
import { SignatureError } from '../src/errors.ts';
import type { GenericHmacOptions } from '../src/config/schema.ts';
import type { Adapter, InboundRequest } from './types.ts';
import {
  anySignatureMatches,
  checkTimestamp,
  hmac,
  isoDate,
  jsonPointer,
  optionalString,
  parseJson,
  parseJsonUnlessDeclaredOther,
  requireSignatureHeader,
  stringOrIntegerId,
  unixSecondsDate,
} from './verify.ts';

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
