import type { Context } from 'hono';
import { z } from 'zod';
import { InputError } from '../errors.ts';
import { decodeCursor, type PageRequest, type TiebreakType } from '../store/queries/cursor.ts';

const issues = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');

/** Parses a JSON body by `schema`; every problem is a 400 naming the field. */
export async function readBody<T extends z.ZodType>(request: Request, schema: T, example: string): Promise<z.infer<T>> {
  let raw: unknown;
  try {
    raw = await request.json();
  } catch {
    throw new InputError('invalid_json', `the body must be JSON like ${example}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new InputError('invalid_request', issues(parsed.error));
  return parsed.data;
}

/** Parses the query string by `schema` (unknown parameters are refused: a typo must not silently widen a list). */
export function readQuery<T extends z.ZodType>(c: Context, schema: T): z.infer<T> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw new InputError('invalid_query', issues(parsed.error));
  return parsed.data;
}

export const note = z.string().trim().min(1, 'a note saying why is required').max(2000);

/** The paging parameters of a list whose rows break ties by `tiebreak` (see decodeCursor). */
export const pageQuery = (tiebreak: TiebreakType) => ({
  limit: z.coerce.number().int().min(1).max(500).default(50),
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
