/** Just enough of Markdown to check what the project's pages claim: their prose, headings, links and tables. */

/** The page without its fenced code blocks: a link or a heading in one is text, not a link or a heading. */
export function prose(page: string): string {
  return page.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '');
}

/**
 * The anchors a page has: those GitHub gives its headings (lower case, punctuation dropped, each space a "-",
 * repeats numbered), and those written `<a id="…">`.
 */
export function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, text] of prose(page).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = text!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of prose(page).matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(id!);
  return found;
}

/** Every link target written `[text](target)` in the page's prose, as written. */
export function links(page: string): string[] {
  return [...prose(page).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

/** The text of one section: from its heading to the next heading of the same level or above. */
export function section(page: string, heading: string): string {
  const lines = page.split('\n');
  const start = lines.findIndex((line) => line.replace(/^#+\s+/, '') === heading && line.startsWith('#'));
  if (start < 0) throw new Error(`no section "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((line, i) => i > start && /^#+\s/.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The cells of each body row of every table in `text` (the header and its rule left out). */
export function tableRows(text: string): string[][] {
  const rows: string[][] = [];
  let header = true;
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) {
      header = true;
      continue;
    }
    const cells = line.slice(1, line.endsWith('|') ? -1 : undefined).split(/(?<!\\)\|/).map((cell) => cell.trim());
    if (header) {
      header = false;
      continue;
    }
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    rows.push(cells);
  }
  return rows;
}
