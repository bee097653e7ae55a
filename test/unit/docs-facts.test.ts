import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADAPTER_NAMES } from '../../adapters/index.ts';
import { anchors, links, prose, section, tableRows } from '../support/markdown.ts';

/**
 * What the pages state that the code decides: a page that says it wrong misleads a reader until someone trips on
 * it, so each such fact is read from both sides here. A count that changes with every release (the migrations) is
 * better not stated at all; where a page states one anyway, it must be the true one.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const PAGES = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const page = (path: string) => read(path);

const SCRIPTS = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
const MIGRATIONS = (JSON.parse(read('src/store/migrations/meta/_journal.json')) as { entries: { tag: string }[] }).entries;
const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty'];
const numberOf = (word: string) => (/^\d+$/.test(word) ? Number(word) : NUMBERS.indexOf(word.toLowerCase()));

/** The source files whose comments may point a reader at a page. */
function sourceFiles(): string[] {
  return ['src', 'adapters', 'scripts', 'bench', 'bin', 'test'].flatMap((dir) =>
    (readdirSync(join(ROOT, dir), { recursive: true }) as string[])
      .filter((file) => /\.(ts|tsx|mjs|js|sql)$/.test(file))
      .map((file) => `${dir}/${file}`),
  );
}

describe('the pages', () => {
  it.each(PAGES)('%s: every relative link finds its file, and every #anchor its heading', (path) => {
    const broken: string[] = [];
    for (const target of links(page(path))) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file === '' ? path : normalize(join(dirname(path), file));
      if (!existsSync(join(ROOT, resolved))) broken.push(`${target}: no file ${resolved}`);
      else if (anchor !== undefined && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) broken.push(`${target}: no heading "#${anchor}" in ${resolved}`);
    }
    expect(broken).toEqual([]);
  });

  it.each(PAGES)('%s: every npm command it shows is a script of package.json', (path) => {
    const named = [...page(path).matchAll(/\bnpm (?:run ([\w:.-]*[\w])|(start|test)\b)/g)].map((m) => m[1] ?? m[2]!);
    expect(named.filter((script) => !(script in SCRIPTS))).toEqual([]);
  });

  it.each(PAGES)('%s: every file of the repository it names in code is there', (path) => {
    const named = [...prose(page(path)).matchAll(/`((?:src|test|scripts|bench|adapters|docs|bin)\/[^`\s]+)`/g)].map((m) => m[1]!.replace(/[:#].*$/, ''));
    expect(named.filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
  });

  it.each(PAGES)('%s: cites no issue number, which a reader of the repository cannot follow', (path) => {
    // An upstream project's issue (porsager/postgres#1120) is a public link, and allowed.
    expect(prose(page(path)).match(/\bissues? #?\d+\b|(?<![\w/.-])#\d+\b/gi) ?? []).toEqual([]);
  });
});

describe('facts the pages share with the code', () => {
  // A sender is its module and one row of senders.md's table: nothing else on the pages lists them.
  const senderRows = () => tableRows(section(page('docs/senders.md'), 'The senders'));

  it("every sender in adapters/ is a row of senders.md's table, and no other", () => {
    const expected = [...ADAPTER_NAMES].sort();
    // A sender's module is one that sets an ack budget; each is registered under its file's name.
    const modules = readdirSync(join(ROOT, 'adapters')).filter((f) => /ackTimeoutMs: \d/.test(read(`adapters/${f}`))).map((f) => f.replace(/\.ts$/, ''));
    expect(modules.sort()).toEqual(expected);
    expect(senderRows().map(([name]) => /^`([a-z-]+)`$/.exec(name!)?.[1] ?? name).sort()).toEqual(expected);
  });

  it("senders.md's ack budget of each sender is its adapter's", () => {
    const stated = senderRows().map(([name, , , budget]) => [name!.replaceAll('`', ''), /^[\d.]+ s\b/.exec(budget!)?.[0] ?? budget]);
    const actual = stated.map(([name]) => {
      const ms = /ackTimeoutMs: ([\d_]+)/.exec(read(`adapters/${name}.ts`))?.[1];
      return [name, ms === undefined ? 'none' : `${Number(ms.replaceAll('_', '')) / 1000} s`];
    });
    expect(stated).toEqual(actual);
  });

  it('a number of migrations stated anywhere is the number shipped, and every migration named is shipped', () => {
    const files = readdirSync(join(ROOT, 'src/store/migrations')).filter((f) => f.endsWith('.sql'));
    expect(MIGRATIONS.map((m) => `${m.tag}.sql`)).toEqual(files.sort());
    for (const path of PAGES) {
      const text = page(path);
      const counts = [...text.matchAll(/\b(\d+|\w+) migrations\b|"(?:applied|shipped)": (\d+)/g)]
        .map((m) => numberOf(m[1] ?? m[2]!))
        .filter((n) => n >= 0);
      expect(counts.filter((n) => n !== MIGRATIONS.length), path).toEqual([]);
    }
    for (const path of [...PAGES, ...sourceFiles()]) {
      const named = [...read(path).matchAll(/\bmigrations? ((?:`?\d{4}`?(?:,\s*(?:and\s+)?|\s+and\s+)?)+)/gi)].flatMap((m) => m[1]!.match(/\d{4}/g)!);
      expect(named.filter((n) => !files.some((f) => f.startsWith(`${n}_`))), path).toEqual([]);
    }
  });

  it('development.md names every vitest project, and counts them right', () => {
    const projects = [...read('vitest.config.ts').matchAll(/\bname: '([\w-]+)'/g)].map((m) => m[1]!);
    const dev = page('docs/development.md');
    const stated = /`npm test` runs (\w+) vitest projects:\n\n([\s\S]*?)\n\n/.exec(dev)!;
    expect(numberOf(stated[1]!)).toBe(projects.length);
    expect(tableRows(stated[2]!).map(([name]) => name!.replaceAll('`', '')).sort()).toEqual(projects.sort());
  });

  it('a source comment that points at a page points at one in the repository', () => {
    const missing: string[] = [];
    for (const path of sourceFiles()) {
      for (const [name] of read(path).matchAll(/[\w./-]*[\w-]+\.md\b/g)) {
        const here = [join(ROOT, name), join(ROOT, dirname(path), name)];
        if (!here.some((p) => existsSync(p)) && !PAGES.some((p) => basename(p) === name)) missing.push(`${path}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
