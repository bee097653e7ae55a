import { z } from 'zod';

/** What an RFC 6901 pointer may look like: empty, or "/"-separated keys with "~" escaped as "~0" or "~1". */
export const JSON_POINTER_SYNTAX = /^(\/([^~/]|~[01])*)*$/;

/** A pointer a config names, said by an example where it is not one. */
export const jsonPointerSchema = z.string().regex(JSON_POINTER_SYNTAX, 'a JSON pointer like "/order/id"');

/** The keys an RFC 6901 pointer walks through; the empty pointer walks through none. */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  // ~1 before ~0, as RFC 6901 says: "~01" is the key "~1", not "/".
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => raw.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** RFC 6901 lookup; undefined when any step is missing. Only own properties, so "/constructor" finds nothing. */
export function jsonPointer(json: unknown, pointer: string): unknown {
  let current: unknown = json;
  for (const token of pointerTokens(pointer)) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (typeof current === 'object' && current !== null && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}
