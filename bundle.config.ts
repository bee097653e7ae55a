import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

/**
 * The production build (`npm run build`): the gateway, the CLI and most of their dependencies bundled into a few
 * files. A start loads its modules one by one, and Node's loader spent most of the gateway's import on the ~710 files
 * a start read unbundled (oncehook's own ~210, undici, drizzle-orm, zod, hono, prom-client…): ~60 now. The entries keep the paths the
 * launcher, the tests and the bench know (dist/src/cli/main.js); what the dynamic imports load later (the dashboard,
 * each engine's driver, copy-data) stays a chunk of its own under dist/chunks/.
 *
 * Four dependencies stay in node_modules, imported as they are: PGlite finds its WebAssembly and data files beside
 * its own modules; postgres.js is repaired in place by scripts/patch-postgres.mjs, and a start checks that repair
 * there; jsonata is loaded by path into the transform child; pino starts its transports' workers by path. These four
 * are package.json's `dependencies`, all an installed package fetches; what is bundled is a dev dependency.
 */
const ROOT = fileURLToPath(new URL('.', import.meta.url));
const MARK = '__oncehookModuleUrl__';

/**
 * Each module's `import.meta.url` as it was before the bundle: where tsc would have put it under dist/. The modules
 * that read files beside them (the migrations, the database functions, the cluster image, the transform child, the
 * driver repairs) then find them where scripts/copy-assets.mjs puts them, whichever chunk they end up in.
 */
function unbundledModuleUrls(): Plugin {
  return {
    name: 'oncehook-unbundled-module-urls',
    enforce: 'pre',
    transform(code, id) {
      if (id.includes('/node_modules/') || !id.startsWith(ROOT) || !code.includes('import.meta.url')) return null;
      const compiled = `dist/${relative(ROOT, id).replace(/\.tsx?$/, '.js')}`;
      return { code: code.replaceAll('import.meta.url', `${MARK}(${JSON.stringify(compiled)})`), map: null };
    },
    renderChunk(code, chunk) {
      if (!code.includes(MARK)) return null;
      const at = dirname(`dist/${chunk.fileName}`);
      const url = (_: string, compiled: string) => `new URL(${JSON.stringify(relative(at, compiled))}, import.meta.url).href`;
      return { code: code.replace(new RegExp(`${MARK}\\(["']([^"']+)["']\\)`, 'g'), url), map: null };
    },
  };
}

export default defineConfig({
  plugins: [unbundledModuleUrls()],
  ssr: {
    // Everything else is bundled: pure JavaScript, which reads no file of its own package at run time.
    noExternal: true,
    external: ['@electric-sql/pglite', 'postgres', 'pino', 'jsonata'],
  },
  // The build's own files, not a web app's: nothing to copy from a public folder.
  publicDir: false,
  build: {
    ssr: true,
    target: 'node20',
    outDir: 'dist',
    // scripts/copy-assets.mjs writes beside the bundle after it, replacing what it copies.
    emptyOutDir: true,
    minify: false,
    sourcemap: false,
    reportCompressedSize: false,
    rolldownOptions: {
      input: {
        'src/cli/main': 'src/cli/main.ts',
        // The transform child runs in a process of its own (src/shape/evaluator.ts spawns it by path).
        'src/shape/transform-child': 'src/shape/transform-child.ts',
      },
      output: { format: 'esm', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
    },
  },
});
