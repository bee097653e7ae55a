import { configMask, type Mask } from '../config/mask.ts';
import type { Config } from '../config/schema.ts';
import type { Db } from '../store/connect.ts';
import { receiptBody } from '../store/queries/delivery-body.ts';

/**
 * Bytes of a body shown at most, on the API, the CLI and the dashboard alike: enough for any event a person reads
 * whole, and a page that stays light when a sender posts megabytes. Past it the text is cut, and said to be.
 */
export const SHOWN_BODY_BYTES = 64 * 1024;

/** Read past the cut, so that a credential straddling it is masked whole before the text is cut. */
const MASK_MARGIN = 1024;

/**
 * A receipt's body as people are shown it. `body` is UTF-8 text, or base64 when the bytes are not text
 * (`bodyEncoding`); `bodyTruncated` when it holds only the first SHOWN_BODY_BYTES of the `bodyBytes` received.
 * `bodyPurged` when the bytes are no longer kept: the source's retention purged them (or they came before oncehook
 * kept them).
 */
export type ShownBody =
  | { body: string; bodyEncoding: 'utf8' | 'base64'; bodyTruncated: boolean; bodyPurged: false }
  | { body: null; bodyEncoding: null; bodyTruncated: false; bodyPurged: true };

const PURGED: ShownBody = { body: null, bodyEncoding: null, bodyTruncated: false, bodyPurged: true };

/**
 * The body of receipt `id`, with every credential of the config that occurs in it masked (a sender may quote a
 * verify token or a secret back), as the stored headers are redacted.
 */
export async function shownBody(db: Db, id: string, config: Config): Promise<ShownBody> {
  const mask = maskOf(config);
  const kept = await receiptBody(db, id, SHOWN_BODY_BYTES + MASK_MARGIN);
  if (kept === null) return PURGED;
  const text = utf8(kept.head, kept.bytes > kept.head.byteLength);
  if (text === null) {
    const head = kept.head.subarray(0, SHOWN_BODY_BYTES);
    return { body: Buffer.from(head).toString('base64'), bodyEncoding: 'base64', bodyTruncated: kept.bytes > head.byteLength, bodyPurged: false };
  }
  const masked = mask(text);
  const cut = cutAt(masked, SHOWN_BODY_BYTES);
  return { body: cut, bodyEncoding: 'utf8', bodyTruncated: kept.bytes > kept.head.byteLength || cut.length < masked.length, bodyPurged: false };
}

/** The mask of each config, made once: a config does not change while a process runs. */
const masks = new WeakMap<Config, Mask>();
function maskOf(config: Config): Mask {
  let mask = masks.get(config);
  if (mask === undefined) masks.set(config, (mask = configMask(config)));
  return mask;
}

const strict = new TextDecoder('utf-8', { fatal: true });

/** The bytes as text, or null when they are not UTF-8; a head cut inside a character drops that character. */
function utf8(head: Uint8Array, cut: boolean): string | null {
  for (let drop = 0; drop <= (cut ? 3 : 0); drop++) {
    try {
      return strict.decode(head.subarray(0, head.byteLength - drop));
    } catch {
      // Try one byte fewer: only the last character of a cut head may be incomplete.
    }
  }
  return null;
}

/** The longest start of `text` of at most `bytes` UTF-8 bytes, never splitting a character. */
function cutAt(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  let cut = Buffer.from(text).subarray(0, bytes).toString('utf8');
  // A split character decodes as U+FFFD at the end; drop it rather than show a character that was not sent.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut;
}
