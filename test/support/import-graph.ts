/**
 * The project's own imports, file to file, as the parser reads them: static imports and re-exports, `import()`
 * and `typeof import()`, type-only ones included, since a type imported from above ties a module to that layer as
 * surely as a value does. Specifiers that leave the folders read (packages, node:, package.json) are not edges.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseAst } from 'vite';

/** Each file's path from the root, with the files it imports. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

const SOURCE = /\.tsx?$/;
const IMPORTING = new Set(['ImportDeclaration', 'ExportNamedDeclaration', 'ExportAllDeclaration', 'ImportExpression', 'TSImportType']);

/** The specifiers a file names, wherever in it they stand; text that only looks like an import is not one. */
export function specifiers(path: string, text: string): string[] {
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const { type, source } = node as { type?: unknown; source?: { type?: unknown; value?: unknown } | null };
    if (typeof type === 'string' && IMPORTING.has(type) && source?.type === 'Literal' && typeof source.value === 'string') found.push(source.value);
    Object.values(node).forEach(visit);
  };
  visit(parseAst(text, { lang: path.endsWith('x') ? 'tsx' : 'ts' }, path).body);
  return found;
}

export function importGraph(root: string, folders: readonly string[]): ImportGraph {
  const files = folders.flatMap((folder) =>
    (readdirSync(join(root, folder), { recursive: true }) as string[]).filter((file) => SOURCE.test(file) && !file.endsWith('.d.ts')).map((file) => `${folder}/${file}`),
  );
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const targets = specifiers(file, readFileSync(join(root, file), 'utf8'))
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => relative(root, resolve(root, dirname(file), specifier)))
        .filter((target) => known.has(target));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** Every circle of files that import each other, each as its files in order, found once (Tarjan's components). */
export function circles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (stack.includes(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}
