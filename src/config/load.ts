import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { spellingErrorMap } from './issue-messages.ts';
import { jsonSyntaxProblem } from './json-syntax.ts';
import { configSchema, type Config } from './schema.ts';

/** The config could not be used; `problems` lists every one, each led by its JSON path. */
export class ConfigError extends Error {
  readonly problems: string[];

  constructor(file: string, problems: string[]) {
    super(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

function pathText(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path
    .map((key, i) =>
      typeof key === 'number' ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(String(key)) ? `${i ? '.' : ''}${String(key)}` : `[${JSON.stringify(String(key))}]`,
    )
    .join('');
}

interface Substitution {
  env: NodeJS.ProcessEnv;
  /** Where a relative `${file:…}` path starts: the config file's folder, not the working directory. */
  folder: string;
  /** Where a variable was unset with no default, or a file could not be read: the text is left as written. */
  missing: { path: PropertyKey[]; name: string; why?: string }[];
  /** Variables that were unset and took the default written in the file: worth a warning at start. */
  defaulted: Set<string>;
}

/**
 * A secret mounted as a file (Docker and Kubernetes secrets, systemd credentials): its content, less the one line
 * break that `echo` and most editors end a file with. Any other whitespace stays, for the secret schema to refuse.
 * The path may name a variable (`${file:${CREDENTIALS_DIRECTORY}/shop}`, systemd's folder of credentials).
 */
function fileValue(written: string, s: Substitution, path: PropertyKey[], whole: string): string {
  let unset: string | undefined;
  const file = written.replace(VARIABLE, (_: string, name: string) => {
    const found = s.env[name];
    if (found === undefined) unset ??= name;
    return found ?? '';
  });
  if (unset !== undefined) {
    s.missing.push({ path, name: unset });
    return whole;
  }
  try {
    return readFileSync(resolve(s.folder, file), 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    s.missing.push({ path, name: file, why: `cannot read ${file}: ${unreadable(error as NodeJS.ErrnoException)}` });
    return whole;
  }
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replaces every `${NAME}` in string values from the environment, `${NAME:-default}` with the default when NAME
 * is unset, and `${file:PATH}` with the file's content, collecting what is missing.
 */
function substitute(value: unknown, path: PropertyKey[], s: Substitution): unknown {
  if (typeof value === 'string') {
    return value.replace(
      /\$\{(?:file:((?:[^{}]|\$\{[A-Za-z_][A-Za-z0-9_]*\})+)|([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}/g,
      (whole: string, file: string | undefined, name: string, fallback: string | undefined) => {
        if (file !== undefined) return fileValue(file, s, path, whole);
        const found = s.env[name];
        if (found !== undefined) return found;
        if (fallback !== undefined) {
          s.defaulted.add(name);
          return fallback;
        }
        s.missing.push({ path, name });
        return whole;
      },
    );
  }
  if (Array.isArray(value)) return value.map((item, i) => substitute(item, [...path, i], s));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, [...path, key], s)]));
  }
  return value;
}

export interface LoadedConfig {
  config: Config;
  /** Environment variables that were unset and fell back to the file's `${NAME:-default}`. */
  defaulted: string[];
}

/** Validates an already-read config text. Exported for tests and `check-config`. */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const where = jsonSyntaxProblem(text);
    const said = where ? `line ${where.line}, column ${where.column}: ${where.message}` : (error as Error).message;
    throw new ConfigError(file, [`(root): not valid JSON: ${said}`]);
  }
  const missing: Substitution['missing'] = [];
  const defaulted = new Set<string>();
  const filled = substitute(raw, [], { env, folder: dirname(resolve(file)), missing, defaulted });
  const problems = missing.map(({ path, name, why }) => `${pathText(path)}: ${why ?? `environment variable ${name} is not set`}`);
  const result = configSchema.safeParse(filled, { error: spellingErrorMap });
  if (!result.success) {
    for (const issue of result.error.issues) {
      if (!leftByMissing(issue, missing)) problems.push(`${pathText(issue.path)}: ${issue.message}`);
    }
  }
  if (problems.length > 0 || !result.success) throw new ConfigError(file, problems);
  return { config: result.data, defaulted: [...defaulted] };
}

/**
 * Whether a problem is about the `${NAME}` text an unset variable left in a value: already told as the missing
 * variable, and gone once it is set. A value of the wrong type (a number written as "${PORT}") is not: setting
 * the variable still leaves a string there.
 */
function leftByMissing(issue: z.core.$ZodIssue, missing: Substitution['missing']): boolean {
  if (issue.code === 'invalid_type') return false;
  return missing.some(({ path }) => path.length <= issue.path.length && path.every((key, i) => key === issue.path[i]));
}

/** Why a file could not be read, in words a person acts on, with the system's code to search for. */
function unreadable(error: NodeJS.ErrnoException): string {
  const said: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'it is a directory' };
  if (error.code === undefined) return error.message;
  const words = said[error.code];
  return words ? `${words} (${error.code})` : error.code;
}

export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(file, [`cannot read the file: ${unreadable(error as NodeJS.ErrnoException)}`]);
  }
  return parseConfig(text, file, env);
}
