import { z } from 'zod';
import { didYouMean } from '../nearest.ts';

/**
 * zod's words for the two slips a person writing a config by hand makes most — a misspelt key, a misspelt
 * option — with the nearest known word to correct it by. Passed to `safeParse` as its error map, so the other
 * problems keep zod's own words and the schema stays free of messages about spelling.
 */
export const spellingErrorMap: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'unrecognized_keys' && issue.inst instanceof z.ZodObject) return unknownKeys(issue.keys, Object.keys(issue.inst.shape));
  if (issue.code === 'invalid_value' && typeof issue.input === 'string') {
    const near = didYouMean(issue.input, issue.values.filter((value): value is string => typeof value === 'string'));
    if (near !== null) return `${JSON.stringify(issue.input)} is not an option: ${near}`;
  }
  return undefined;
};

/** One key: what it may have meant, or else the keys there are. Several: each with its guess. */
function unknownKeys(keys: readonly string[], known: readonly string[]): string {
  const told = keys.map((key) => ({ key, near: didYouMean(key, known) }));
  const list = `the keys here are ${known.join(', ')}`;
  if (told.length === 1) return `unknown key ${JSON.stringify(told[0]!.key)}: ${told[0]!.near ?? list}`;
  const each = told.map(({ key, near }) => (near ? `${JSON.stringify(key)} (${near})` : JSON.stringify(key)));
  return `unknown keys ${each.join(', ')}${told.some(({ near }) => near === null) ? `; ${list}` : ''}`;
}
