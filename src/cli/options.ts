import { InvalidArgumentError, Option } from 'commander';

// Values the parser checks, so that a wrong one is refused with the command line (exit 2, one line and the
// --help hint) before anything is opened or asked, in every command alike.

/** A whole number from `min` to `max`; anything else is refused in the words of `expected`. */
export const wholeNumber =
  (min: number, max: number, expected: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(expected);
    return n;
  };

/** fetch reaches nothing but http and https: any other `--url` would only be found out by a crash. */
function httpUrl(value: string): string {
  const { protocol } = URL.canParse(value) ? new URL(value) : { protocol: null };
  if (protocol !== 'http:' && protocol !== 'https:') throw new InvalidArgumentError('an http:// or https:// URL, such as http://127.0.0.1:8080');
  return value;
}

/** A running oncehook's address, for the admin commands and send-sample. */
export const urlOption = (description: string) =>
  new Option('--url <url>', description).env('ONCEHOOK_URL').default('http://127.0.0.1:8080').argParser(httpUrl);

/** pino's levels, written out: importing pino to list them would load it for every admin command too. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** In any case, as pino takes it: LOG_LEVEL=INFO ran before the level was checked here, and must run still. */
export function logLevel(value: string): string {
  const level = value.toLowerCase();
  if (!LOG_LEVELS.includes(level)) throw new InvalidArgumentError(`one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/**
 * The scheme of `url` when it names one other than PostgreSQL's, which the driver would read as PostgreSQL's all the
 * same: a mysql:// URL got as far as a database "not found" there. Null for a PostgreSQL URL, or one with no scheme.
 * Checked in the command's action, not by an argParser, whose message would print the URL, password and all.
 */
export function foreignScheme(url: string): string | null {
  const scheme = url.match(/^([a-z][a-z\d+.-]*):\/\//i)?.[1];
  return scheme !== undefined && !/^postgres(ql)?$/i.test(scheme) ? scheme : null;
}

/** How a PostgreSQL URL is written, for the messages that refuse another. */
export const POSTGRES_URL_FORM = 'postgres://USER:PASSWORD@HOST:5432/DATABASE (or postgresql://)';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000 } as const;

/**
 * A wait written as the config writes durations, "500ms", "90s", "5m", or 0 for none. Parsed here rather than by
 * src/config/duration.ts, which loads zod: every command would pay for it.
 */
export function waitDuration(value: string): number {
  if (value.trim() === '0') return 0;
  const match = /^(\d+)(ms|s|m)$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError('a duration like "500ms", "60s" or "5m", or 0 for no wait');
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
