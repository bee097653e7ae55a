import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { ADAPTER_NAMES, SENDER_OPTIONS, SENDERS, senderNamed } from '../../adapters/index.ts';
import { jsonPointerSchema } from '../json-pointer.ts';
import { filterProblems, matcherProblems, type FilterProblem } from '../shape/filter-syntax.ts';
import { taskKeyProblems } from '../shape/task-key.ts';
import { compileTransform } from '../shape/transform.ts';
import { duration } from './duration.ts';
import { alertSchema } from './alerts.ts';
import { destinationSchema, originProblem } from './destinations.ts';
import { templateOrigin } from '../shape/url-template.ts';
import { oauth2Schema } from './auth.ts';
import { secret, wellFormed } from './secret.ts';
import { asTemplate, lookupUrl } from './urls.ts';
import { orderSchema } from './order.ts';
import { headerNameProblems, idempotencyHeader, idempotencyHeaderProblem, METHODS, requestHeaders } from './request.ts';

const actionId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 63 characters');

/** A refinement's `when` that runs it whatever else is wrong in the value, as long as it is an object to read. */
const onAnyObject = { when: (payload: z.core.ParsePayload) => typeof payload.value === 'object' && payload.value !== null };

/**
 * Entries by a name that must match `name`. A key failing a record's key schema has its entry skipped, so a
 * misnamed source hid every problem inside it until it was renamed: here the key takes any string, the name is
 * one problem beside its entry's own, and the pattern is still the key's in the JSON Schema, for editors.
 */
function named<Value extends z.ZodType>(name: z.ZodString, value: Value) {
  return z.record(z.string().meta({ pattern: z.toJSONSchema(name).pattern }), value).superRefine((entries, ctx) => {
    for (const key of Object.keys(entries)) {
      const broken = name.safeParse(key).error?.issues.map((issue) => issue.message);
      if (broken) ctx.addIssue({ code: 'custom', path: [key], message: `this name is not allowed: ${broken.join('; ')}` });
    }
  }, onAnyObject);
}

export const actionSchema = z.strictObject({
  url: z
    .url({ protocol: /^https?$/ })
    .superRefine(asTemplate)
    .describe('where each task is sent; the path and query may name the delivery: {body:/customer/id}, {header:NAME}, {sent:/id}, {key}'),
  idempotency: z
    .enum(['key', 'none'])
    .default('none')
    .describe('"key": the downstream honours Idempotency-Key; "none": it does not'),
  lookup: z
    .union([
      lookupUrl,
      z.strictObject({
        url: lookupUrl,
        headers: requestHeaders.optional().describe("default: the action's headers"),
        found: z
          .unknown()
          .refine((found) => found !== undefined, { message: 'a lookup object needs found: the filter its JSON answer matches when the effect exists' })
          .superRefine((found, ctx) => addProblems(ctx, matcherProblems(found)))
          .describe('a filter the JSON answer matches when the effect exists'),
        referencePointer: jsonPointerSchema
          .optional()
          .describe("JSON pointer into a found answer naming the effect, e.g. /results/0/id; default: the action's referencePointer"),
      }),
    ])
    .optional()
    .describe('GET URL template answering whether the effect of task {key} exists, or {url, headers, found} for a search API'),
  topics: z
    .array(
      z
        .string()
        .min(1)
        .refine((topic) => topic === topic.trim(), { message: 'spaces around a topic: it would never match a delivery\'s topic' }),
    )
    .min(1)
    .optional(),
  timeoutMs: z.int().positive().default(10_000),
  maxAttempts: z.int().min(1).max(100).default(8),
  keyRetention: duration.prefault('24h').describe('how long the downstream keeps idempotency keys'),
  after: actionId.optional().describe('a sibling action whose task must succeed first'),
  approval: z.literal('required').optional(),
  order: orderSchema.optional(),
  signingSecret: secret.optional(),
  method: z.enum(METHODS).default('POST'),
  transform: z
    .string()
    .min(1)
    .superRefine((expression, ctx) => {
      const compiled = compileTransform(expression);
      if (!compiled.ok) ctx.addIssue({ code: 'custom', message: compiled.message });
    })
    .optional()
    .describe('a JSONata expression: its result, as JSON, is the body sent'),
  filter: z
    .unknown()
    .superRefine((filter, ctx) => {
      if (filter !== undefined) addProblems(ctx, filterProblems(filter));
    })
    .optional()
    .describe('which deliveries make a task: {"body": M, "headers": M, "topic": M}'),
  headers: requestHeaders.optional().describe('sent with every attempt and lookup; values are secrets: use ${NAME}'),
  auth: z
    .strictObject({ oauth2: oauth2Schema })
    .optional()
    .describe('OAuth 2.0 client credentials: a token fetched, cached and sent as Authorization: Bearer with every attempt and lookup'),
  idempotencyHeader,
  referencePointer: jsonPointerSchema.optional().describe('JSON pointer into a 2xx response naming the created thing'),
  backoff: z
    .strictObject({
      initialMs: z.int().positive().default(1000),
      maxMs: z.int().positive().default(3_600_000),
    })
    .default({ initialMs: 1000, maxMs: 3_600_000 }),
}).superRefine(checkRequestHeaders, onAnyObject);
export type ActionConfig = z.output<typeof actionSchema>;

/** Header names the action cannot set, in its own headers and its lookup's, each told with its path. */
function addProblems(ctx: z.RefinementCtx, problems: readonly FilterProblem[]): void {
  for (const { path, message } of problems) ctx.addIssue({ code: 'custom', path, message });
}

function checkRequestHeaders(action: Partial<Record<keyof ActionConfig, unknown>>, ctx: z.RefinementCtx): void {
  const request = {
    idempotencyHeader: typeof action.idempotencyHeader === 'string' ? action.idempotencyHeader : 'Idempotency-Key',
    signed: action.signingSecret !== undefined,
    sendersBytes: action.transform === undefined,
  };
  const renamed = typeof action.idempotencyHeader === 'string' ? idempotencyHeaderProblem(action.idempotencyHeader, request) : null;
  if (renamed !== null) ctx.addIssue({ code: 'custom', path: ['idempotencyHeader'], message: renamed });
  const lookup = action.lookup;
  const places: [PropertyKey[], unknown, typeof request][] = [
    [['headers'], action.headers, request],
    // A lookup sends no body, so no content type is the sender's.
    [['lookup', 'headers'], typeof lookup === 'object' && lookup !== null ? (lookup as { headers?: unknown }).headers : undefined, { ...request, sendersBytes: false }],
  ];
  for (const [path, headers, rules] of places) {
    if (typeof headers !== 'object' || headers === null) continue;
    for (const { name, message } of headerNameProblems(headers as Record<string, string>, rules)) {
      ctx.addIssue({ code: 'custom', path: [...path, name], message });
    }
    // The token would go out beside the header, or in its place: either way one of the two is not what is meant.
    if (action.auth === undefined) continue;
    for (const name of Object.keys(headers)) {
      if (name.toLowerCase() === 'authorization') ctx.addIssue({ code: 'custom', path: [...path, name], message: 'auth.oauth2 sends the Authorization header: remove this one' });
    }
  }
}

export const sourceSchema = z
  .strictObject({
    adapter: z.enum(ADAPTER_NAMES),
    secrets: z.array(secret).min(1).describe('every secret is tried, so one can be rotated'),
    actions: named(actionId, actionSchema).superRefine(checkSteps, onAnyObject),
    taskKey: z
      .string()
      .min(1)
      // Checked on the field, so its problems are listed beside any other of the source (a misspelt adapter).
      .superRefine((key, ctx) => {
        for (const problem of taskKeyProblems(key)) ctx.addIssue({ code: 'custom', message: problem });
      })
      .default('{eventId}')
      .describe('template naming the business task: {eventId}, {deliveryId}, {topic}, {header:NAME}, {body:/pointer}'),
    ackTimeoutMs: z.int().positive().optional().describe("default: the sender's documented timeout"),
    maxBodyBytes: z.int().positive().default(1024 * 1024),
    readTimeoutMs: z.int().positive().default(15_000),
    maxBatchItems: z
      .int()
      .positive()
      .default(1000)
      .describe('the most events one delivery may carry (a SendGrid, HubSpot, Meta or Twilio batch): more is refused 413, nothing recorded'),
    maxBodiesReading: z
      .int()
      .positive()
      .default(64)
      .describe("this source's bodies being read at once; past it, 503 with Retry-After for this source alone"),
    retention: duration.prefault('30d').describe('how long bodies are kept; dedup keys outlive it'),
    ...SENDER_OPTIONS,
    publicUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe('the URL senders that sign the URL they call (twilio, square) call: its origin, with the path they call'),
    verifyToken: secret.optional().describe("the token a sender's GET handshake presents (meta's hub.verify_token)"),
    rateLimit: z
      .strictObject({
        perSecond: z.number().positive(),
        burst: z.int().positive().optional().describe('default: one second of perSecond'),
      })
      .optional()
      .describe('past it, deliveries are answered 429 with Retry-After instead of queueing'),
  })
  // Run whatever else is wrong in the source (`when`), so a bad secret is listed beside a misspelt field; the
  // parts read here may then be malformed themselves, and are left to their own problems.
  .superRefine(checkSecretsAndOptions, onAnyObject);
export type SourceConfig = z.output<typeof sourceSchema>;

function checkSecretsAndOptions(source: Partial<Record<keyof SourceConfig, unknown>>, ctx: z.RefinementCtx): void {
  const { adapter, secrets, actions } = source;
  const settings: Partial<Record<string, unknown>> = source;
  const sender = typeof adapter === 'string' ? senderNamed(adapter) : undefined;
  for (const [field, message] of Object.entries(sender?.needs ?? {})) {
    if (settings[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message });
  }
  // Another sender's options, even under a misspelt adapter: they would be ignored.
  for (const { name, options } of SENDERS) {
    if (options && typeof adapter === 'string' && adapter !== name && settings[options.field] !== undefined) {
      ctx.addIssue({ code: 'custom', path: [options.field], message: `"${options.field}" options belong to ${name}, not ${adapter}` });
    }
  }
  // Secrets are decoded when the adapter and the signers are made; a bad one found only then stopped a start
  // after the migrations, without its path, and passed check-config.
  const key = sender?.secretKey;
  if (key && Array.isArray(secrets)) {
    secrets.forEach((value: unknown, i) => {
      if (typeof value === 'string' && wellFormed(value) && !decodes(() => key.decode(value))) {
        ctx.addIssue({ code: 'custom', path: ['secrets', i], message: key.problem });
      }
    });
  }
  if (typeof actions !== 'object' || actions === null) return;
  for (const [id, action] of Object.entries(actions as Record<string, unknown>)) {
    const signing = typeof action === 'object' && action !== null ? (action as { signingSecret?: unknown }).signingSecret : undefined;
    if (typeof signing === 'string' && wellFormed(signing) && !decodes(() => new Webhook(signing))) {
      ctx.addIssue({ code: 'custom', path: ['actions', id, 'signingSecret'], message: 'not a Standard Webhooks secret: "whsec_" and base64' });
    }
  }
}

/**
 * The `after` links of a source's actions: each names a sibling, and none comes back round. Run on the record
 * whatever else is wrong in it or in its source (`when`), so these are listed beside a misspelt adapter or a bad
 * URL, not only once those are fixed; an action or an `after` that is itself malformed is left to its own problem.
 */
function checkSteps(actions: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const afters = new Map<string, string | undefined>();
  for (const [id, action] of Object.entries(actions)) {
    const after = typeof action === 'object' && action !== null ? (action as { after?: unknown }).after : undefined;
    afters.set(id, typeof after === 'string' && actionId.safeParse(after).success ? after : undefined);
  }
  for (const [id, after] of afters) {
    if (after === undefined) continue;
    const path = [id, 'after'];
    const cycle = stepCycle(afters, id);
    if (after === id) {
      ctx.addIssue({ code: 'custom', path, message: 'an action cannot wait for itself' });
    } else if (!afters.has(after)) {
      ctx.addIssue({ code: 'custom', path, message: `no sibling action "${after}" in this source` });
    } else if (cycle && cycle[0] === id) {
      ctx.addIssue({ code: 'custom', path, message: `steps that wait for each other never start: ${[...cycle, id].join(' → ')}` });
    }
  }
}

/** The chain of `after` from `start` when it comes back to an action already on it, or null. */
function stepCycle(afters: Map<string, string | undefined>, start: string): string[] | null {
  const chain: string[] = [];
  for (let id: string | undefined = start; id !== undefined && afters.has(id); id = afters.get(id)) {
    if (chain.includes(id)) return chain.slice(chain.indexOf(id));
    chain.push(id);
  }
  return null;
}

function decodes(decode: () => unknown): boolean {
  try {
    decode();
    return true;
  } catch {
    return false;
  }
}

const sourceId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, 'letters, digits, "-" and "_", starting with a letter or digit, at most 63 characters');

export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  publicUrl: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('where people reach this gateway (https://oncehook.example.com): alerts link to its dashboard'),
  alerts: named(actionId, alertSchema).default({}).describe('messages to people about the work that waits for them'),
  destinations: z
    .record(z.string().meta({ format: 'uri' }), destinationSchema)
    .default({})
    .describe('limits per downstream origin, held across every worker of every instance'),
  sources: named(sourceId, sourceSchema)
    .refine((sources) => Object.keys(sources).length > 0, 'no source is configured: every delivery would be answered 404'),
  limits: z
    .strictObject({
      maxInFlight: z
        .int()
        .positive()
        .default(256)
        .describe('verified deliveries being planned or recorded at once; past it, 503 with Retry-After'),
      minBodyBytesPerSecond: z
        .int()
        .positive()
        .default(1024)
        .describe('once bodyRateGraceMs have passed, a body must keep arriving at this average rate or be cut off with 408'),
      bodyRateGraceMs: z.int().positive().default(2000).describe('how long a body may take before minBodyBytesPerSecond applies'),
      keepAliveMs: z
        .int()
        .min(1000)
        .max(3_600_000)
        .default(5000)
        .describe(
          'how long a client connection may sit idle between requests before the gateway closes it; behind a load balancer that reuses connections, set it above the balancer\'s own idle timeout',
        ),
      writeStallMs: z
        .int()
        .min(1000)
        .default(30_000)
        .describe(
          'on PostgreSQL, how long a batch of deliveries, a claim or a batch of finishes waits for the database to answer before its connection is abandoned and it is tried again on a new one (a network path that died without a reset)',
        ),
    })
    .prefault({}),
}).superRefine(checkDestinations, onAnyObject);
export type Config = z.output<typeof configSchema>;

/** The origins the actions send to and look up at: what a `destinations` entry can limit. */
export function originsInUse(sources: Record<string, { actions: Record<string, { url: string; lookup?: string | { url: string } | undefined }> }>): Set<string> {
  const origins = new Set<string>();
  for (const source of Object.values(sources)) {
    for (const action of Object.values(source.actions)) {
      origins.add(new URL(action.url).origin);
      if (action.lookup !== undefined) origins.add(templateOrigin(typeof action.lookup === 'string' ? action.lookup : action.lookup.url));
    }
  }
  return origins;
}

/**
 * Each `destinations` key is an origin some action sends to or looks up at: a key misspelt, or written with a
 * path, would limit nothing, and the API it was meant for would get every request at once.
 */
function checkDestinations(config: Partial<Record<keyof Config, unknown>>, ctx: z.RefinementCtx): void {
  const { destinations, sources } = config;
  if (typeof destinations !== 'object' || destinations === null) return;
  let inUse: Set<string> | null = null;
  try {
    inUse = originsInUse(sources as Config['sources']);
    // An alert's messages are requests too, and a destination may hold them to its limits.
    for (const alert of Object.values((config.alerts ?? {}) as Record<string, { url: string }>)) inUse.add(new URL(alert.url).origin);
  } catch {
    // A source or action malformed is told by its own problem; the origins in use are then not known.
  }
  for (const key of Object.keys(destinations)) {
    const problem = originProblem(key);
    if (problem !== null) ctx.addIssue({ code: 'custom', path: ['destinations', key], message: problem });
    else if (inUse !== null && !inUse.has(key)) {
      const known = [...inUse].sort().join(', ') || 'none';
      ctx.addIssue({ code: 'custom', path: ['destinations', key], message: `no action sends to or looks up at ${key}; the origins in use are: ${known}` });
    }
  }
}
