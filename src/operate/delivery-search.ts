import { InputError } from '../errors.ts';
import type { Filter } from '../shape/filter.ts';
import { filterProblems } from '../shape/filter-syntax.ts';

/** Characters of a search at most: a filter a person types, not a document. */
const MATCH_CHARACTERS = 4000;

const EXAMPLE = '{"body":{"id":1001}}';

/**
 * A content search as a person writes it (`?match=`, the dashboard's search box): a filter in the actions' syntax,
 * checked as the config check checks one, every problem named with its path. A 400 otherwise.
 */
export function parseMatch(text: string): Filter {
  if (text.length > MATCH_CHARACTERS) throw new InputError('invalid_match', `match is longer than ${MATCH_CHARACTERS} characters`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InputError('invalid_match', `match is not JSON (${(error as Error).message}); write a filter like ${EXAMPLE}`);
  }
  const problems = filterProblems(parsed);
  if (problems.length > 0) {
    const said = problems.map(({ path, message }) => (path.length > 0 ? `match.${path.join('.')}: ${message}` : `match: ${message}`));
    throw new InputError('invalid_match', `${said.join('; ')} (e.g. ${EXAMPLE})`);
  }
  return parsed as Filter;
}
