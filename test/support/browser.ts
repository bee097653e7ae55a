import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';

/**
 * The browser tests' Chromium comes from the `@sparticuz/chromium` devDependency, whose tarball holds a
 * brotli-compressed headless Chromium for Linux x64: `npm ci` is all the set-up, with no system browser and no
 * download of its own. The package unpacks it into the temporary directory (~200 MB, about 1.5 s) the first time,
 * and later launches reuse that copy.
 *
 * Its own default is to unpack loose into the temporary directory (`/tmp/chromium`, `/tmp/libGLESv2.so`, …) and to
 * take whatever `/tmp/chromium` it finds there, even another version's or one cut short by a killed run. So it
 * unpacks here in a child process whose TMPDIR is a fresh directory, which is then renamed into place under a name
 * carrying the package's version: a directory under that name is always complete, two runs unpacking at once both
 * end with the same one, and an upgrade unpacks anew (the older versions' directories are removed).
 *
 * The binary links the system's NSS, NSPR and expat, and draws text with the system's fonts through fontconfig:
 * the machine image ships them (libnss3, libnspr4, libexpat1, fonts-dejavu-core).
 */
const PACKAGE = '@sparticuz/chromium';
const PREFIX = 'oncehook-chromium-';

// As root, Chromium starts only without its sandbox; the others keep it from calling out (the network is closed
// here, and its background connections were refused many at a time) and from work a test never needs.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

function packageVersion(): string {
  // The package's exports do not include its package.json: it is found above the entry point instead (its build
  // folders hold package.json files of their own, with no name).
  for (let dir = dirname(createRequire(import.meta.url).resolve(PACKAGE)); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
    if (name === PACKAGE && version) return version;
  }
  throw new Error(`${PACKAGE}'s package.json not found`);
}

/** The path of the unpacked Chromium binary, unpacking it first if this version has not been yet. */
export async function chromiumExecutable(): Promise<string> {
  const version = packageVersion();
  const home = join(tmpdir(), `${PREFIX}${version}`);
  const binary = join(home, 'chromium');
  if (!existsSync(binary)) {
    // Other versions' copies, and what a run killed while unpacking left (an hour is ample for one to finish).
    for (const name of readdirSync(tmpdir())) {
      const path = join(tmpdir(), name);
      if (!name.startsWith(PREFIX) || name === `${PREFIX}${version}`) continue;
      if (name.includes('.partial-') && Date.now() - statSync(path).mtimeMs < 3_600_000) continue;
      rmSync(path, { recursive: true, force: true });
    }
    const partial = mkdtempSync(`${home}.partial-`);
    try {
      const unpack = `import(${JSON.stringify(PACKAGE)}).then((m) => m.default.executablePath()).then((path) => process.stdout.write(path))`;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', unpack], {
        cwd: dirname(new URL(import.meta.url).pathname),
        env: { ...process.env, TMPDIR: partial },
      });
      if (stdout !== join(partial, 'chromium')) throw new Error(`${PACKAGE} unpacked to ${stdout}, not into ${partial}`);
      try {
        renameSync(partial, home);
      } catch (error) {
        // Another run unpacked the same version first: its copy is as good as this one.
        if (!existsSync(binary)) throw error;
      }
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  return binary;
}

/** A headless Chromium driven by playwright-core, from the package rather than the system. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: await chromiumExecutable(), args: ARGS });
}
