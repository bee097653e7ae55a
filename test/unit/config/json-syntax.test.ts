import { describe, expect, it } from 'vitest';
import { jsonSyntaxProblem } from '../../../src/config/json-syntax.ts';

// [why, text, expected problem]
const rows: [string, string, { line: number; column: number; message: string } | null][] = [
  ['valid JSON has none', '{"a": [1, -2.5e3, true, null, "x\\n\\u00e9"]}', null],
  ['a comma before "}"', '{\n  "a": 1,\n}', { line: 3, column: 1, message: 'a comma before "}": JSON allows none after the last property' }],
  ['a comma before "]"', '{"a": [1, 2, ]}', { line: 1, column: 14, message: 'a comma before "]": JSON allows none after the last item' }],
  ['a missing comma between properties', '{\n  "a": 1\n  "b": 2\n}', { line: 3, column: 3, message: 'expected "," or "}" after a property\'s value, found a string: a missing comma?' }],
  ['a missing comma between items', '[1 2]', { line: 1, column: 4, message: 'expected "," or "]" after an item, found "2"' }],
  ['a missing comma between strings', '{"secrets": ["a"\n  "b"]}', { line: 2, column: 3, message: 'expected "," or "]" after an item, found a string: a missing comma?' }],
  ['a value missing', '{"a": }', { line: 1, column: 7, message: 'expected a value, found "}"' }],
  ['a misspelt literal', '{"a": tru}', { line: 1, column: 7, message: 'expected a value, found "t"' }],
  ['single quotes', "{'a': 1}", { line: 1, column: 2, message: 'property names take double quotes, not single' }],
  ['a single-quoted value', "{\"a\": 'b'}", { line: 1, column: 7, message: 'strings take double quotes, not single' }],
  ['a key without quotes', '{a: 1}', { line: 1, column: 2, message: 'expected a property name in double quotes, found "a"' }],
  ['no colon', '{"a" 1}', { line: 1, column: 6, message: 'expected ":" after the property name, found "1"' }],
  ['a comment', '{\n  // the shop\n  "a": 1\n}', { line: 2, column: 3, message: 'JSON has no comments' }],
  ['the text ends early', '{"sources": {', { line: 1, column: 14, message: 'expected a property name in double quotes, found the end of the file' }],
  ['a string that never ends', '{"a": "b', { line: 1, column: 9, message: 'a string that never ends: its closing double quote is missing' }],
  ['a line break in a string', '{"a": "b\nc"}', { line: 1, column: 9, message: 'a line break inside a string: write it as \\n' }],
  ['an escape JSON lacks', '{"a": "\\q"}', { line: 1, column: 8, message: 'an escape JSON does not have: \\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hex digits' }],
  ['a leading zero', '{"a": 01}', { line: 1, column: 8, message: 'a number JSON does not have: no leading zeros, digits on both sides of a point' }],
  ['a second value', '{"a": 1}}', { line: 1, column: 9, message: 'more text after the end of the JSON value' }],
  ['a byte order mark', '\uFEFF{"a": 1}', { line: 1, column: 1, message: 'the file starts with a byte order mark: save it as UTF-8 without one' }],
  ['an empty file', '', { line: 1, column: 1, message: 'expected a value, found the end of the file' }],
];

describe('jsonSyntaxProblem', () => {
  it.each(rows)('%s', (_why, text, expected) => {
    expect(jsonSyntaxProblem(text)).toEqual(expected);
    // It finds a problem exactly where JSON.parse does.
    expect(expected === null).toBe(parses(text));
  });

  it('says no more of the text than the one character it stopped at, which may begin a secret', () => {
    expect(jsonSyntaxProblem('{"secrets": [hunter2]}')?.message).toBe('expected a value, found "h"');
  });
});

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
