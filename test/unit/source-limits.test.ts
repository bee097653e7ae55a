import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Two limits the code is held to: no `any` (a type the compiler stops checking, so a wrong field name in a view
 * goes unseen), and no source file longer than a reader takes in at once. Each failure names the file and line.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_LINES = 400;

function codeFiles(dir: string): string[] {
  return (readdirSync(join(ROOT, dir), { recursive: true }) as string[])
    .filter((file) => /\.(ts|tsx|mjs|js|sql)$/.test(file))
    .map((file) => `${dir}/${file}`);
}

/**
 * The text with its comments and string literals blanked, line breaks kept: what is left is code, where `any` can
 * only be a type. One pass, left to right, so a quote inside a comment or a slash inside a string misleads nothing.
 */
function codeOnly(text: string): string {
  return text.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\[\s\S]|[^`\\])*`/g, (found) => found.replace(/[^\n]/g, ' '));
}

/** `any` where a type goes: after `:`, `<`, `,`, `|`, `&`, `=`, `(`, `[`, `=>`, `as`, `keyof`, `extends`, `readonly`, or before `[]`. */
const ANY = /(?<=(?:[:<,|&=([]|=>|\bas|\bkeyof|\bextends|\breadonly)\s*)any\b|\bany\s*\[\]/;

function anyTypes(text: string): number[] {
  return codeOnly(text)
    .split('\n')
    .flatMap((line, i) => (ANY.test(line) ? [i + 1] : []));
}

describe('the source', () => {
  it('finds `any` where a type goes, and not in words', () => {
    const typed = ['let a: any;', 'x as any', 'Promise<any>', 'Record<string, any>', 'const b: any[] = []', '(f: () => any) => 1', 'type T = any | string'];
    expect(typed.map((line) => anyTypes(line).length)).toEqual(typed.map(() => 1));
    const words = ["// as any other", "'as any task'", '/* x: any */', '`any: ${y}`', '<option value="">any</option>', 'const company = 1'];
    expect(words.map((line) => anyTypes(line).length)).toEqual(words.map(() => 0));
  });

  it('has no `any` in src/ or adapters/', () => {
    const found = [...codeFiles('src'), ...codeFiles('adapters')]
      .filter((file) => /\.tsx?$/.test(file))
      .flatMap((file) => anyTypes(readFileSync(join(ROOT, file), 'utf8')).map((line) => `${file}:${line}`));
    expect(found).toEqual([]);
  });

  it(`has no file in src/ or adapters/ over ${MAX_LINES} lines`, () => {
    const long = [...codeFiles('src'), ...codeFiles('adapters')]
      .map((file) => [file, readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1] as const)
      .filter(([, lines]) => lines > MAX_LINES)
      .map(([file, lines]) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });
});
