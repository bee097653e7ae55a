import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';

/**
 * A small CRM API inside the demo downstream, to try an action that calls a real API against: a bearer token,
 * a JSON body it validates, `Idempotency-Key` as Stripe honours it, a search that answers 200 with an empty
 * list (what a `lookup` object's `found` is for), and a rate limit that answers 429. It serves
 * `/crm/contacts` and below only: every other path, the example config's `/crm/tasks` among them, stays the
 * open effect recorder.
 */
export const CRM_PATH = '/crm/contacts';

export const isCrmPath = (pathname: string) => pathname === CRM_PATH || pathname.startsWith(`${CRM_PATH}/`);

export interface CrmOptions {
  /** The bearer token every request must carry. */
  token: string;
  /** Requests admitted in any one second; the next is answered 429. */
  perSecond: number;
}

export interface CrmRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An answer, and the few words the request's line ends with (never a header's value: the token is one). */
export interface Reply {
  status: number;
  body: object;
  headers?: Record<string, string>;
  note: string;
}

const required = (what: string) => ({ error: what });
const ContactFields = z.strictObject({
  email: z.string(required('a string with an @')).regex(/^[^@\s]+@[^@\s]+$/, 'a string with an @'),
  name: z.string(required('a non-empty string')).trim().min(1, 'a non-empty string'),
  external_id: z.string(required('a non-empty string')).min(1, 'a non-empty string'),
  phone: z.string(required('a string, when given')).optional(),
  tags: z.array(z.string(), required('a list of strings, when given')).optional(),
});
type ContactFields = z.infer<typeof ContactFields>;
type Contact = ContactFields & { id: string; created_at: string; updated_at: string };

const FIELD_NAMES = Object.keys(ContactFields.shape).join(', ');

export function demoCrm(options: CrmOptions): (request: CrmRequest) => Reply {
  // Keyed by external_id, unique as a CRM's external ID field is: a POST of a known one is refused, a PUT updates
  // it. Refused with 400, as Stripe (resource_already_exists) and Salesforce (DUPLICATE_VALUE) do, not HubSpot's
  // 409: oncehook reads a 409 as "the same key is in progress, try again", and trying again would not help.
  const contacts = new Map<string, Contact>();
  // Only a success is kept under its key, with the request's bytes (Stripe keeps nothing for a request refused
  // before it ran: a 401, 429, 422). A repeat answers the first result; the same key on other bytes is a 422, as
  // the IETF Idempotency-Key draft has it, and would show a gateway that does not resend exactly what it sent.
  const byKey = new Map<string, { request: string; reply: Reply }>();
  const admit = slidingWindow(options.perSecond);
  const authorized = tokenCheck(options.token);
  let count = 0;

  const save = (fields: ContactFields, existing: Contact | undefined): Contact => {
    const now = new Date().toISOString();
    const contact = { id: existing?.id ?? `ct_${++count}`, ...fields, created_at: existing?.created_at ?? now, updated_at: now };
    contacts.set(contact.external_id, contact);
    return contact;
  };

  const write = (method: string, externalId: string | undefined, body: string): Reply => {
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (error) {
      return { status: 400, body: { error: 'invalid_json', message: (error as Error).message }, note: 'not JSON' };
    }
    if (externalId !== undefined && json !== null && typeof json === 'object' && !Array.isArray(json)) {
      const given = (json as { external_id?: unknown }).external_id;
      if (given !== undefined && given !== externalId) return invalid([{ field: 'external_id', problem: `the one in the path, ${externalId}, when given` }]);
      json = { ...json, external_id: externalId };
    }
    const parsed = ContactFields.safeParse(json);
    if (!parsed.success) return invalid(parsed.error.issues.flatMap(fieldProblems));
    const existing = contacts.get(parsed.data.external_id);
    if (method === 'POST' && existing) {
      const message = `a contact with external_id ${existing.external_id} exists: ${existing.id}`;
      return { status: 400, body: { error: 'contact_exists', message, id: existing.id }, note: `exists ${existing.id}` };
    }
    const contact = save(parsed.data, existing);
    return existing ? { status: 200, body: contact, note: `updated ${contact.id}` } : { status: 201, body: contact, note: `created ${contact.id}` };
  };

  return ({ method, url, headers, body }) => {
    if (!authorized(headers.authorization)) {
      const note = headers.authorization === undefined ? 'no token' : 'wrong token';
      const message = 'send Authorization: Bearer <token> (the demo downstream’s --crm-token)';
      return { status: 401, body: { error: 'unauthorized', message }, headers: { 'www-authenticate': 'Bearer realm="demo-crm"' }, note };
    }
    if (!admit()) {
      const message = `more than ${options.perSecond} requests in a second`;
      return { status: 429, body: { error: 'rate_limited', message }, headers: { 'retry-after': '1' }, note: 'rate limited' };
    }

    const rest = url.pathname.slice(CRM_PATH.length + 1);
    const externalId = rest === '' ? undefined : decoded(rest);
    if (externalId === null) return { status: 404, body: { error: 'not_found' }, note: 'no such path' };
    const allowed = externalId === undefined ? ['GET', 'POST'] : ['PUT'];
    if (!allowed.includes(method)) {
      const message = `${method} is not served here: GET ${CRM_PATH}?external_id= to search, POST ${CRM_PATH} to create, PUT ${CRM_PATH}/{external_id} to create or update`;
      return { status: 405, body: { error: 'method_not_allowed', message }, headers: { allow: allowed.join(', ') }, note: 'method not allowed' };
    }

    if (method === 'GET') {
      const wanted = url.searchParams.get('external_id');
      const results = wanted === null ? [...contacts.values()] : [contacts.get(wanted)].filter((c) => c !== undefined);
      return { status: 200, body: { results }, note: `${results.length} found` };
    }

    const key = headers['idempotency-key'];
    const request = `${method} ${url.pathname}\n${body}`;
    const earlier = typeof key === 'string' ? byKey.get(key) : undefined;
    if (earlier && earlier.request !== request) {
      const message = 'this Idempotency-Key came with another request: a retry must send the same method, path and body';
      return { status: 422, body: { error: 'idempotency_key_reused', message }, note: 'key reused on another body' };
    }
    if (earlier) return { ...earlier.reply, headers: { 'idempotent-replayed': 'true' }, note: `replayed: ${earlier.reply.note}` };
    const reply = write(method, externalId, body);
    if (typeof key === 'string' && reply.status < 300) byKey.set(key, { request, reply });
    return reply;
  };
}

/** One path segment, or null for more than one or a malformed escape (which would throw out of the server). */
function decoded(segment: string): string | null {
  if (segment.includes('/')) return null;
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

function invalid(fields: { field: string; problem: string }[]): Reply {
  return { status: 422, body: { error: 'invalid_contact', fields }, note: `invalid ${fields.map((f) => f.field).join(', ')}` };
}

function fieldProblems(issue: z.core.$ZodIssue): { field: string; problem: string }[] {
  if (issue.code === 'unrecognized_keys') return issue.keys.map((field) => ({ field, problem: `not a field of a contact (${FIELD_NAMES})` }));
  if (issue.path.length === 0) return [{ field: '(body)', problem: 'a JSON object' }];
  return [{ field: issue.path.join('.'), problem: issue.message }];
}

/** Admits at most `perSecond` requests in any 1000 ms; a refused one is not counted, so waiting Retry-After works. */
function slidingWindow(perSecond: number): () => boolean {
  const admitted: number[] = [];
  return () => {
    const now = performance.now();
    while (admitted.length > 0 && admitted[0]! <= now - 1000) admitted.shift();
    if (admitted.length >= perSecond) return false;
    admitted.push(now);
    return true;
  };
}

/**
 * The scheme in any case (RFC 7235 §2.1), the token compared as a hash in constant time, as the admin API
 * compares its own: a demo should not teach `===`.
 */
function tokenCheck(token: string): (authorization: string | undefined) => boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  return (authorization) => {
    const given = authorization?.match(/^Bearer +(\S+) *$/i)?.[1];
    return given !== undefined && timingSafeEqual(digest(given), expected);
  };
}
