import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { circles, importGraph, specifiers, type ImportGraph } from '../support/import-graph.ts';

/**
 * Imports point down a webhook's path (docs/architecture.md, "Layers"). Each row is a layer, the lowest first: a
 * file may import from its own layer and the layers before it, never after. In a layer whose folders are `apart`,
 * a folder imports none of its neighbours. A path ending in "/" is a folder, else one file; every file of src/ and
 * adapters/ must stand in a row, so a new folder is placed here before it can be imported from anywhere.
 */
interface Layer {
  name: string;
  paths: readonly string[];
  apart?: true;
}

const LAYERS: readonly Layer[] = [
  {
    name: 'base',
    paths: ['src/errors.ts', 'src/ids.ts', 'src/log.ts', 'src/json-pointer.ts', 'src/header-name.ts', 'src/nearest.ts', 'src/defaults.ts', 'src/periodic.ts', 'src/outage-log.ts'],
  },
  // Pure: bytes in, identities out.
  { name: 'senders', paths: ['adapters/'] },
  // Pure: content in, a decision or bytes out.
  { name: 'shape', paths: ['src/shape/'] },
  // Read by the stages, never reading them; it takes each sender's options and the filter syntax from below.
  { name: 'config', paths: ['src/config/'] },
  // Knows no HTTP.
  { name: 'store', paths: ['src/store/'] },
  { name: 'metrics', paths: ['src/metrics.ts'] },
  // Ingest and forward meet only through the database; alerts and retention are workers on it too.
  { name: 'stages', paths: ['src/ingest/', 'src/forward/', 'src/alerts/', 'src/retention/'], apart: true },
  // What the operator logic decides is the same whichever surface asks; HTTP plumbing serves the surfaces.
  { name: 'operator logic, HTTP plumbing', paths: ['src/operate/', 'src/http/'], apart: true },
  // The admin API's routes and the dashboard, each on the operator logic and the store.
  { name: 'surfaces', paths: ['src/api/', 'src/ui/'], apart: true },
  { name: 'app', paths: ['src/app.ts', 'src/listener.ts'] },
  { name: 'gateway', paths: ['src/gateway.ts'] },
  { name: 'cli', paths: ['src/cli/'] },
];

/** Imports the order of the layers allows and the design does not: [from, to, why]. */
const NEVER: readonly (readonly [string, string, string])[] = [['src/forward/', 'adapters/', 'forwarding works on stored tasks, not senders']];

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The row and path that place a file: its longest path. */
function placeOf(file: string, layers: readonly Layer[]): { row: number; path: string } | null {
  let best: { row: number; path: string } | null = null;
  layers.forEach((layer, row) => {
    for (const path of layer.paths) {
      const holds = path.endsWith('/') ? file.startsWith(path) : file === path;
      if (holds && (best === null || path.length > best.path.length)) best = { row, path };
    }
  });
  return best;
}

/** Each file in no layer, and each import that goes up, across an `apart` layer, or against a NEVER: one line each. */
function breaches(graph: ImportGraph, layers: readonly Layer[], never: typeof NEVER): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = placeOf(file, layers);
    if (from === null) {
      found.push(`${file}: in no layer`);
      continue;
    }
    for (const target of targets) {
      const to = placeOf(target, layers);
      if (to === null) continue;
      const [above, below] = [layers[from.row]!.name, layers[to.row]!.name];
      if (to.row > from.row) found.push(`${file} → ${target}: ${above} imports ${below}, a layer above it`);
      else if (to.row === from.row && to.path !== from.path && layers[from.row]!.apart) found.push(`${file} → ${target}: ${from.path} and ${to.path} are kept apart`);
      for (const [source, dest, why] of never) {
        if (file.startsWith(source) && target.startsWith(dest)) found.push(`${file} → ${target}: ${source} never imports ${dest}: ${why}`);
      }
    }
  }
  return found.sort();
}

describe('the import graph', () => {
  const graph = importGraph(ROOT, ['src', 'adapters']);

  it('goes only down the layers, and every file stands in one', () => {
    expect(breaches(graph, LAYERS, NEVER)).toEqual([]);
  });

  it('has no circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('is read whole: type-only imports, re-exports, import() and typeof import() count', () => {
    const text = [
      "import type { A } from './a.ts';",
      "import { b, type C } from './b.ts';",
      "export { d } from './d.ts';",
      "export * from './e.ts';",
      "const f = await import('./f.ts');",
      "type G = typeof import('./g.ts');",
      "const h = `import i from './i.ts'`;",
    ].join('\n');
    expect(specifiers('x.ts', text)).toEqual(['./a.ts', './b.ts', './d.ts', './e.ts', './f.ts', './g.ts']);
    expect(graph.get('src/cli/main.ts')).toContain('src/gateway.ts');
  });
});

describe('the check', () => {
  const layers: Layer[] = [
    { name: 'low', paths: ['low/'] },
    { name: 'mid', paths: ['mid/a/', 'mid/b/'], apart: true },
    { name: 'high', paths: ['high.ts'] },
  ];
  const graph = new Map([
    ['high.ts', ['mid/a/x.ts', 'low/y.ts']],
    ['mid/a/x.ts', ['low/y.ts', 'mid/b/z.ts', 'high.ts']],
    ['mid/b/z.ts', ['low/y.ts']],
    ['low/y.ts', ['low/w.ts']],
    ['low/w.ts', ['low/y.ts']],
    ['stray.ts', []],
  ]);

  it('names an upward import, one across an apart layer, one it is told never to allow, and a file in no layer', () => {
    expect(breaches(graph, layers, [['mid/b/', 'low/', 'no reason']])).toEqual([
      'mid/a/x.ts → high.ts: mid imports high, a layer above it',
      'mid/a/x.ts → mid/b/z.ts: mid/a/ and mid/b/ are kept apart',
      'mid/b/z.ts → low/y.ts: mid/b/ never imports low/: no reason',
      'stray.ts: in no layer',
    ]);
  });

  it('names each circle once, however it is entered', () => {
    expect(circles(graph)).toEqual([['high.ts', 'mid/a/x.ts'], ['low/w.ts', 'low/y.ts']]);
  });
});
