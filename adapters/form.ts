/**
 * Form-encoded bodies (`application/x-www-form-urlencoded`, as Twilio posts them) read as JSON, so that filters,
 * task keys and transforms read their fields as they read any sender's JSON body. Only the reading changes: the
 * stored and forwarded bytes stay the ones that arrived.
 */

/** A form's fields in order of arrival; a name sent more than once keeps every value. */
export type FormFields = ReadonlyMap<string, readonly string[]>;

// Not fatal: a form is read to compute its signature before anything is trusted, and a body that is not UTF-8
// then simply fails to match. The adapter refuses it as malformed only once the signature has matched.
const lenient = new TextDecoder('utf-8');

export function parseForm(body: Uint8Array): FormFields {
  const fields = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(lenient.decode(body))) {
    const values = fields.get(name);
    if (values) values.push(value);
    else fields.set(name, [value]);
  }
  return fields;
}

/**
 * The fields as a JSON object: each value a string, and a list of strings for a name sent more than once (a
 * form says nothing of numbers: `NumMedia=0` is the string "0"). Built by Object.fromEntries, so a field named
 * `__proto__` is a field like any other, not the object's prototype.
 */
export function formJson(fields: FormFields): Record<string, string | string[]> {
  return Object.fromEntries([...fields].map(([name, values]) => [name, values.length === 1 ? values[0]! : [...values]]));
}
