/**
 * A source's `taskKey`: the template that names the business task of a delivery, checked with the config and
 * rendered at ingest from the verified identity, the request's headers and the body.
 */
import type { Identity } from '../../adapters/types.ts';
import { jsonKind } from '../../adapters/body.ts';
import { InputError } from '../errors.ts';
import { HEADER_NAME } from '../header-name.ts';
import { jsonPointer, JSON_POINTER_SYNTAX } from '../json-pointer.ts';

/** What a template's placeholders read of a delivery. */
export type DeliveryNames = Pick<Identity, 'eventId' | 'deliveryId' | 'topic' | 'json'>;

const PLACEHOLDER = /\{(eventId|deliveryId|topic|header:[^}]+|body:[^}]*)\}/g;

/**
 * What is wrong with a `taskKey` template, for the config check: text that is not a placeholder renders as
 * itself, so a typo (`{eventID}`) or a template without one gave every delivery the same task, every one after
 * the first answered `duplicate_task`.
 */
export function taskKeyProblems(template: string): string[] {
  const problems: string[] = [];
  for (const [, inside] of template.matchAll(/\{([^}]*)\}/g)) {
    const problem = placeholderProblem(inside!);
    if (problem !== null) problems.push(problem);
  }
  // Said only when no part was meant as one: a misspelt placeholder is already named above.
  if (problems.length === 0 && !new RegExp(PLACEHOLDER.source).test(template)) {
    problems.push('names no placeholder, so every delivery would be one task');
  }
  return problems;
}

/**
 * What is wrong with one placeholder's inside, or null: the task key's placeholders, and those another template
 * takes beside them (a URL's `{key}` and `{sent:/pointer}`), told in one list when the part is none of them.
 */
export function placeholderProblem(part: string, more: { named?: string[]; pointers?: string[] } = {}): string | null {
  const named = ['eventId', 'deliveryId', 'topic', ...(more.named ?? [])];
  const pointers = ['body', ...(more.pointers ?? [])];
  if (part.startsWith('header:')) return HEADER_NAME.test(part.slice('header:'.length)) ? null : `{${part}}: not a header name`;
  const from = pointers.find((name) => part.startsWith(`${name}:`));
  if (from !== undefined) {
    return JSON_POINTER_SYNTAX.test(part.slice(from.length + 1)) ? null : `{${part}}: not a JSON pointer like {${from}:/order/id}`;
  }
  if (named.includes(part)) return null;
  const all = [...named.map((name) => `{${name}}`), '{header:NAME}', ...pointers.map((name) => `{${name}:/pointer}`)];
  return `{${part}}: not a placeholder; use ${all.slice(0, -1).join(', ')} or ${all.at(-1)}`;
}

/**
 * Names the business task from a verified delivery with the source's `taskKey` template; or renders another
 * template of the same placeholders, named `what` in its problems (an action's order).
 */
export function renderTaskKey(template: string, identity: DeliveryNames, headers: Headers, what = 'the task key'): string {
  return template.replace(PLACEHOLDER, (_, part: string) => {
    const value = placeholderValue(part, identity, headers, what);
    if (value === undefined || value === '') {
      throw new InputError('missing_identity', `${what} needs {${part}}, which this delivery does not have`);
    }
    return value;
  });
}

function placeholderValue(part: string, identity: DeliveryNames, headers: Headers, what: string): string | undefined {
  if (part === 'eventId') return identity.eventId;
  if (part === 'deliveryId') return identity.deliveryId;
  if (part === 'topic') return identity.topic ?? undefined;
  if (part.startsWith('header:')) return headers.get(part.slice('header:'.length)) ?? undefined;
  const found = jsonPointer(identity.json, part.slice('body:'.length));
  // Past 2^53 two different integers parse to one number: two business tasks would share one ID.
  if (typeof found === 'number' && Number.isInteger(found) && !Number.isSafeInteger(found)) {
    throw new InputError('invalid_identity', `${what}'s {${part}} is a number JSON cannot carry exactly; send it as a string`);
  }
  if (typeof found === 'string' || typeof found === 'number') return String(found);
  // Said as what it is, as the adapters say an identity of another type: "does not have" hid a field that is there.
  if (found !== undefined) throw new InputError('invalid_identity', `${what}'s {${part}} is ${jsonKind(found)}, not a string or a number`);
  return undefined;
}
