// `npm pack`'s first step: the tarball holds the compiled build, so the build is made unless it is current.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildIsCurrent } from '../bin/build-stamp.js';

const root = fileURLToPath(new URL('..', import.meta.url));
if (!buildIsCurrent(root)) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
