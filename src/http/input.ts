import type { Context } from 'hono';
import { z } from 'zod';
import { InputError } from '../errors.ts';
import { decodeCursor, type PageRequest, type TiebreakType } from '../store/queries/cursor.ts';

/** Each problem after the field it is in; one of the whole body or query (an unknown key) after `whole`. */
const issues = (error: z.ZodError, whole: '(body)' | '(query)') =>
  error.issues.map((i) => `${i.path.join('.') || whole}: ${i.message}`).join('; ');

/** Parses a JSON body by `schema`; every problem is a 400 naming the field. */
export async function readBody<T extends z.ZodType>(request: Request, schema: T, example: string): Promise<z.infer<T>> {
  let raw: unknown;
  try {
    raw = await request.json();
  } catch {
    throw new InputError('invalid_json', `the body must be JSON like ${example}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new InputError('invalid_request', issues(parsed.error, '(body)'));
  return parsed.data;
}

/**
 * Parses the query string by `schema`. The API's are strict objects, refusing unknown parameters: a script sees
 * no page, and a misspelt filter would silently widen a list to every task. A dashboard page's are `pageParams`.
 */
export function readQuery<T extends z.ZodType>(c: Context, schema: T): z.infer<T> {
  return parseQuery(c.req.query(), schema);
}

/** As `readQuery`, of parameters gathered otherwise (a page's repeated `state=`, say). */
export function parseQuery<T extends z.ZodType>(query: Record<string, string | undefined>, schema: T): z.infer<T> {
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw new InputError('invalid_query', issues(parsed.error, '(query)'));
  return parsed.data;
}

/**
 * A dashboard page's parameters, ignoring any others. A page is opened from bookmarks and shared links, which
 * gather parameters of their own (utm_…, one an older page took): refused, the link broke over something the page
 * never reads. A person sees the filters the page applied, so a misspelt one widens nothing unseen.
 */
export const pageParams = <Shape extends z.ZodRawShape>(shape: Shape) => z.object(shape);

/** A page's filter field: an empty one arrives as "" and means "any". */
export const blank = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

export const note = z.string().trim().min(1, 'a note saying why is required').max(2000);

const LIMIT = 'must be a whole number of rows from 1 to 500';

/** The paging parameters of a list whose rows break ties by `tiebreak` (see decodeCursor). */
export const pageQuery = (tiebreak: TiebreakType) => ({
  // One sentence whatever is wrong (zod's for "abc" was "expected number, received NaN"). Refused on the
  // dashboard too, not replaced by the default: its own links never write a bad one, so it was typed, by someone
  // who wants to know what to type.
  limit: z.coerce.number({ error: LIMIT }).int(LIMIT).min(1, LIMIT).max(500, LIMIT).default(50),
  cursor: z
    .string()
    .max(400)
    .refine((cursor) => decodeCursor(cursor, tiebreak) !== null, 'not a cursor this list gave out; start again without it')
    .optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
});

export const pageOf = (query: { limit: number; cursor?: string | undefined; order: 'asc' | 'desc' }): PageRequest => ({
  limit: query.limit,
  cursor: query.cursor,
  order: query.order,
});
