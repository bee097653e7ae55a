import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { resolve, sep } from 'node:path';

/**
 * The part of the ustar format (POSIX.1-1988) a cluster image uses: directories and regular files, names of up
 * to 255 bytes. Written by scripts/make-cluster-image.ts, read by the first start of a new data directory.
 * Node has no tar of its own; this is all the image needs, streamed, so the start never holds the ~40 MB
 * archive in memory at once.
 */
const BLOCK = 512;
const REGULAR = '0';
/** Some writers mark a regular file with a NUL type. */
const REGULAR_OLD = '\0';
const DIRECTORY = '5';

export interface TarEntry {
  /** A relative path, `/`-separated; a directory's without a trailing `/`. */
  name: string;
  /** Null for a directory. */
  data: Uint8Array | null;
}

/** A header's fields as octal text, NUL-terminated, in a field `width` bytes wide. */
function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

/** The sum of the header's bytes, the checksum field counted as spaces. */
function checksum(header: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  return sum;
}

/** Splits a name longer than 100 bytes at a `/` into ustar's prefix (155 bytes) and name (100). */
function splitName(name: string): { prefix: string; name: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  for (let at = name.indexOf('/'); at !== -1; at = name.indexOf('/', at + 1)) {
    const prefix = name.slice(0, at);
    const rest = name.slice(at + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return { prefix, name: rest };
  }
  throw new Error(`${name}: too long for a ustar header`);
}

function header(entry: TarEntry): Buffer {
  const block = Buffer.alloc(BLOCK);
  const { prefix, name } = splitName(entry.name);
  const directory = entry.data === null;
  block.write(name, 0, 100);
  block.write(octal(directory ? 0o700 : 0o600, 8), 100);
  block.write(octal(0, 8), 108); // uid
  block.write(octal(0, 8), 116); // gid
  block.write(octal(entry.data?.length ?? 0, 12), 124);
  block.write(octal(0, 12), 136); // mtime: fixed, so one cluster makes one archive
  block.write(directory ? DIRECTORY : REGULAR, 156);
  block.write('ustar\0' + '00', 257);
  block.write(prefix, 345, 155);
  block.write(octal(checksum(block), 7) + ' ', 148);
  return block;
}

/** The archive of `entries`, in their order; a directory must come before what it holds. */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    parts.push(header(entry));
    if (entry.data) {
      parts.push(Buffer.from(entry.data));
      parts.push(Buffer.alloc((BLOCK - (entry.data.length % BLOCK)) % BLOCK));
    }
  }
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

function text(block: Buffer, start: number, width: number): string {
  const field = block.subarray(start, start + width);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? width : end).toString('utf8');
}

function number(block: Buffer, start: number, width: number, what: string): number {
  const field = text(block, start, width).trim();
  if (!/^[0-7]+$/.test(field)) throw new Error(`tar: the ${what} of an entry is not an octal number: ${JSON.stringify(field)}`);
  return parseInt(field, 8);
}

/** Where `name` goes under `root`; a name that would leave it (absolute, or through `..`) is refused. */
function inside(root: string, name: string): string {
  const path = resolve(root, name);
  if (path !== root && !path.startsWith(root + sep)) {
    throw new Error(`tar: the entry ${JSON.stringify(name)} is outside the directory it is extracted into`);
  }
  return path;
}

interface Pending {
  path: string;
  fd: number;
  left: number;
  padding: number;
}

/**
 * Extracts the archive read from `chunks` into the directory `into` (made if missing): directories 0700, files
 * 0600, as PostgreSQL keeps its own. Files are written, not flushed: each is handed to `written` once whole, so
 * the caller can flush it while the rest is extracted. An archive cut short, a damaged header or an entry of
 * another type is an error.
 */
export async function extractTar(chunks: AsyncIterable<Buffer>, into: string, written: (path: string) => void = () => {}): Promise<void> {
  const root = resolve(into);
  mkdirSync(root, { recursive: true });
  let held: Buffer = Buffer.alloc(0);
  let file: Pending | null = null;
  let ended = false;
  try {
    for await (const chunk of chunks) {
      held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      while (!ended) {
        if (file) {
          const writing = Math.min(file.left, held.length);
          if (writing > 0) writeSync(file.fd, held, 0, writing);
          file.left -= writing;
          held = held.subarray(writing);
          if (file.left > 0) break;
          if (held.length < file.padding) break;
          held = held.subarray(file.padding);
          closeSync(file.fd);
          written(file.path);
          file = null;
          continue;
        }
        if (held.length < BLOCK) break;
        const block = held.subarray(0, BLOCK);
        held = held.subarray(BLOCK);
        if (block.every((byte) => byte === 0)) {
          ended = true;
          break;
        }
        if (number(block, 148, 8, 'checksum') !== checksum(block)) throw new Error('tar: a header does not match its checksum');
        const prefix = text(block, 345, 155);
        const name = prefix ? `${prefix}/${text(block, 0, 100)}` : text(block, 0, 100);
        const path = inside(root, name);
        const type = String.fromCharCode(block[156]!);
        if (type === DIRECTORY) {
          mkdirSync(path, { recursive: true, mode: 0o700 });
        } else if (type === REGULAR || type === REGULAR_OLD) {
          const size = number(block, 124, 12, 'size');
          file = { path, fd: openSync(path, 'w', 0o600), left: size, padding: (BLOCK - (size % BLOCK)) % BLOCK };
        } else {
          throw new Error(`tar: ${name} is of type ${JSON.stringify(type)}; only directories and regular files are extracted`);
        }
      }
    }
  } finally {
    if (file) closeSync(file.fd);
  }
  if (!ended) throw new Error('tar: the archive ends before its end-of-archive blocks: it is cut short');
}
