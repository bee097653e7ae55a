/** A verified body read: UTF-8, JSON no deeper than a bound, and a batch no longer than the source takes. */
import { HttpError, InputError } from '../src/errors.ts';
import type { InboundRequest } from './types.ts';

// fatal: a body that is not valid UTF-8 is malformed, not silently patched with U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(body: Uint8Array): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new InputError('malformed_body', 'the body is not valid UTF-8');
  }
}

/** Parses a verified body; call only after the signature matched. */
export function parseJson(body: Uint8Array): unknown {
  return parseJsonText(decodeUtf8(body));
}

/**
 * Deeper than any sender's payload, shallow enough that nothing downstream of the parse (a log serializer, a
 * pointer walk, a person's viewer) can be driven into a stack overflow by a hostile but validly signed body.
 */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays and objects, counted over the text without parsing it. */
function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

export function parseJsonText(text: string): unknown {
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new InputError('malformed_body', `the body nests JSON deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError('malformed_body', `the body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * The JSON body where the sender may also send something else (Shopify can send XML): a body declared as
 * another content type is kept as bytes with json undefined; anything declared as JSON, or undeclared, must parse.
 */
export function parseJsonUnlessDeclaredOther(headers: Headers, body: Uint8Array): unknown {
  const contentType = headers.get('content-type');
  if (contentType !== null && !/[/+]json\b/i.test(contentType)) return undefined;
  return parseJson(body);
}

/**
 * A batch's list of events, refused whole with 413 when it holds more than the source takes: counted before any
 * event is named, so an oversized batch costs its parse and no more.
 */
export function withinBatchLimit<T>(events: T[], request: InboundRequest): T[] {
  const max = request.maxItems;
  if (max !== undefined && events.length > max) {
    throw new HttpError(413, 'too_many_items', `the delivery carries ${events.length} events; this source takes at most ${max} in one (maxBatchItems)`);
  }
  return events;
}

/** A JSON value's type as a message names it: "a number", "an object", "null". */
export function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
