/** A name written into a statement: double-quoted, any quote in it doubled. */
export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * A value written into a statement where no parameter can go (COPY takes none): single-quoted, any quote in it
 * doubled. Read as written only under `standard_conforming_strings = on`, which the sessions set (SESSION).
 */
export const literal = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * Settings both sides run under, so that each value is written as text the same way on the embedded source and
 * on PostgreSQL: the checksums compare that text, and COPY carries it. ISO dates in UTC with every microsecond,
 * bytea as hex, floats written in the fewest digits that read back exactly.
 */
export const SESSION: Record<string, string> = {
  datestyle: 'ISO, MDY',
  timezone: 'UTC',
  bytea_output: 'hex',
  extra_float_digits: '1',
  standard_conforming_strings: 'on',
};
