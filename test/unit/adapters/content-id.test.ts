import { describe, expect, it } from 'vitest';
import { canonicalJson, contentId } from '../../../adapters/content-id.ts';

describe('contentId', () => {
  it('is the same for the same content however it is serialized: key order and spacing aside', () => {
    const sent = JSON.parse('{"event":"meeting.started","event_ts":1654503849680,"payload":{"object":{"id":"1","uuid":"u"}}}');
    const resent = JSON.parse('{ "payload": { "object": { "uuid": "u", "id": "1" } }, "event_ts": 1654503849680, "event": "meeting.started" }');
    expect(contentId('zoom-', resent)).toBe(contentId('zoom-', sent));
    expect(contentId('zoom-', sent)).toMatch(/^zoom-[0-9a-f]{32}$/);
  });

  it('differs when anything in the content differs, array order included', () => {
    const ids = [{ a: [1, 2] }, { a: [2, 1] }, { a: [1, 2], b: null }, { a: ['1', 2] }, { a: [1, 2, {}] }].map((value) => contentId('', value));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('writes canonical JSON: sorted keys, no whitespace, strings escaped as JSON escapes them', () => {
    expect(canonicalJson({ b: 1, a: { d: [true, null], c: 'ä"' } })).toBe('{"a":{"c":"ä\\"","d":[true,null]},"b":1}');
  });
});
