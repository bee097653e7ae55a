/** What hostile or careless senders send, for the property tests at the adapter and at the HTTP level. */
import fc from 'fast-check';

const printable = fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,80}$/);
const hex = fc.stringMatching(/^[0-9a-fA-F]{0,130}$/);
const base64 = fc.stringMatching(/^[A-Za-z0-9+/]{0,90}={0,2}$/);
/** Any unix time, and the present, so a timestamp window is sometimes passed. */
const seconds = fc.oneof(fc.integer({ min: -1e12, max: 1e13 }), fc.constant(Math.floor(Date.now() / 1000))).map(String);

/** Values shaped like each scheme's signature headers, and plain noise. */
export const headerValue = fc.oneof(
  printable,
  seconds,
  fc.tuple(seconds, hex, hex).map(([t, a, b]) => `t=${t},v1=${a},v0=${b}`),
  hex.map((h) => `sha256=${h}`),
  fc.array(base64, { maxLength: 3 }).map((sigs) => sigs.map((s) => `v1,${s}`).join(' ')),
);

/** The signature, timestamp and identity headers of every scheme the adapters know. */
export const headerName = fc.constantFrom(
  'content-type',
  'x-shopify-hmac-sha256',
  'shopify-hmac-sha256',
  'x-shopify-event-id',
  'x-shopify-webhook-id',
  'x-shopify-topic',
  'stripe-signature',
  'x-hub-signature-256',
  'x-hub-signature',
  'x-github-delivery',
  'x-github-hook-id',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-acme-signature',
  'x-acme-timestamp',
  'x-acme-delivery',
  'x-hook-signature',
  'x-hook-event',
  'x-hook-time',
  'x-hubspot-signature-v3',
  'x-hubspot-request-timestamp',
  'x-gitlab-token',
  'x-gitlab-event-uuid',
  'idempotency-key',
  'linear-signature',
  'linear-delivery',
  'typeform-signature',
);

/**
 * What a body may put where an ID, a topic or a time belongs: including what PostgreSQL cannot store — a NUL,
 * a lone surrogate — and times outside its years (0, past 9999) as ISO text and as unix seconds.
 */
const idLike = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant('\u0000'),
  fc.constant('evt_\ud800'),
  fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)), minLength: 1, maxLength: 3 }),
  fc.constantFrom('0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '+010000-01-01T00:00:00Z', 253402300800, 253402300799),
  fc.string({ minLength: 250, maxLength: 300 }),
);

/**
 * Bodies that sometimes carry each scheme's identities, validly or not. Never empty: octokit refuses to sign
 * an empty payload (GitHub never sends one); empty bodies are covered by the arbitrary-request properties.
 */
export const signedBody = fc
  .oneof(
    fc.json(),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc
      .record(
        {
          id: idLike,
          action_run_id: idLike,
          handle: idLike,
          type: idLike,
          created: idLike,
          timestamp: idLike,
          event: fc.record({ id: idLike, type: idLike, at: idLike }),
          event_id: idLike,
          event_type: idLike,
          form_response: fc.record({ submitted_at: idLike }),
          object_kind: idLike,
          action: idLike,
          createdAt: idLike,
          data: fc.record({ id: idLike }),
        },
        { requiredKeys: [] },
      )
      .map((body) => JSON.stringify(body)),
    // A list of events (HubSpot's), each sometimes with its identities.
    fc
      .array(fc.record({ eventId: idLike, portalId: idLike, subscriptionId: idLike, subscriptionType: idLike, occurredAt: idLike }, { requiredKeys: [] }), {
        maxLength: 3,
      })
      .map((events) => JSON.stringify(events)),
  )
  .filter((body) => body !== '');
