/** RFC 6901 lookup; undefined when any step is missing. Only own properties, so "/constructor" finds nothing. */
export function jsonPointer(json: unknown, pointer: string): unknown {
  if (pointer === '') return json;
  let current: unknown = json;
  for (const raw of pointer.slice(1).split('/')) {
    // ~1 before ~0, as RFC 6901 says: "~01" is the key "~1", not "/".
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
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
