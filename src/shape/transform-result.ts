/**
 * What one evaluation of a transform gives: the bytes of the body, or the error the task's ledger will show. Pure,
 * and free of the rest of transform.ts, so that it can run wherever JSONata runs and only bytes or a message leave.
 */
/** `late`: never evaluated, for it could not start before its delivery had to be answered. */
export type Shaped = { ok: true; bytes: Uint8Array } | { ok: false; error: string; late?: true };

export const fail = (error: string): Shaped => ({ ok: false, error });

/** JSONata's errors are plain objects: a `message` and, where it has them, a `code` and the `position` after the token. */
export function explain(error: unknown): { text: string; position: number | null } {
  const { message, code, position } = (typeof error === 'object' && error !== null ? error : { message: error }) as Record<string, unknown>;
  const at = typeof position === 'number' ? position : null;
  return { text: `${at === null ? '' : ` at character ${at}`}: ${String(message)}${typeof code === 'string' ? ` (JSONata ${code})` : ''}`, position: at };
}

/** The outcome of JSONata's `evaluate`: its value as a body, or why there is none. */
export function shapedOf(outcome: { value: unknown } | { error: unknown }, limitBytes: number): Shaped {
  if ('error' in outcome) return fail(`the transform failed${explain(outcome.error).text}`);
  if (outcome.value === undefined) return fail('the transform gave no result: the expression matched nothing in this delivery');
  return serialise(outcome.value, limitBytes);
}

class Refused extends Error {}
/** JSONata's function values are objects marked `_jsonata_function` or `_jsonata_lambda` that hold a JS function. */
const isFunction = (item: unknown) =>
  typeof item === 'function' ||
  (typeof item === 'object' && item !== null && ('_jsonata_function' in item || '_jsonata_lambda' in item) &&
    Object.values(item).some((v) => typeof v === 'function'));

/** JSON.stringify would quietly drop a function or write Infinity as null: a body the user did not mean is refused. */
function serialise(value: unknown, limit: number): Shaped {
  const tooLarge = `the transform's result is larger than ${limit} bytes, the most one task may send`;
  let atLeast = 0; // every value, object key and string character is at least a byte: counting stops a huge result early
  try {
    const json = JSON.stringify(value, function (this: unknown, key: string, item: unknown) {
      const where = key === '' ? '' : ` at "${key}"`;
      if (isFunction(item)) throw new Refused(`the transform's result is not JSON: a function${where}`);
      if (typeof item === 'number' && !Number.isFinite(item)) throw new Refused(`the transform's result is not JSON: ${item}${where}`);
      atLeast += 1 + (Array.isArray(this) ? 0 : key.length) + (typeof item === 'string' ? item.length : 0);
      if (atLeast > limit) throw new Refused(tooLarge);
      return item;
    });
    const bytes = new TextEncoder().encode(json);
    return bytes.length > limit ? fail(tooLarge) : { ok: true, bytes };
  } catch (error) {
    return fail(error instanceof Refused ? error.message : `the transform's result is not JSON: ${String(error)}`);
  }
}
