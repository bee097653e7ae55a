import { createHash, createHmac, randomUUID } from 'node:crypto';
import type { SourceConfig } from '../config/schema.ts';
import { pointerTokens } from '../json-pointer.ts';
import { hubspotSignedUri } from '../../adapters/hubspot.ts';

export interface SampleOptions {
  eventId?: string | undefined;
  deliveryId?: string | undefined;
  topic?: string | undefined;
  /** The path the sample is posted to (`/in/{source}`): Twilio and Square sign the URL, `publicUrl` and this path. */
  path?: string | undefined;
}

/** Senders whose deliveries carry one ID, the event's: `--delivery-id` has nowhere to go. */
const ONE_ID = new Set<SourceConfig['adapter']>(['stripe', 'shopify-flow', 'standard-webhooks', 'slack', 'sendgrid', 'twitch', 'zoom', 'meta', 'square', 'hubspot', 'typeform']);

/**
 * Why `--delivery-id` has nowhere to go in this source's deliveries, or null. A generic-hmac source has a delivery
 * ID only where its config says where one is found; without that, ingest takes the event ID for it.
 */
function deliveryIdRefusal(source: SourceConfig): string | null {
  if (source.adapter === 'generic-hmac') {
    return source.hmac?.deliveryId ? null : "this generic-hmac source's hmac names no deliveryId, so its deliveries have no ID apart from their event's (name one in the config to send one)";
  }
  if (source.adapter === 'woocommerce') return "a woocommerce delivery is named by its webhook's ID and its event (X-WC-Webhook-Delivery-ID names no one delivery)";
  return ONE_ID.has(source.adapter) ? `a ${source.adapter} delivery has no ID of its own apart from its event's (a retry repeats it)` : null;
}

/** A sample that cannot be built as asked: said to the person, exit 2. */
export class SampleError extends Error {}

/**
 * A correctly signed sample delivery for a configured source, so a newcomer can watch one be accepted and
 * then deduplicated without a real sender. Signed with the source's first secret, the way its sender signs.
 */
export function buildSample(source: SourceConfig, options: SampleOptions): { headers: Record<string, string>; body: string } {
  const refused = options.deliveryId === undefined ? null : deliveryIdRefusal(source);
  if (refused) throw new SampleError(`--delivery-id: ${refused}; use --event-id`);
  const eventId = options.eventId ?? String(Math.floor(Math.random() * 1e12));
  const deliveryId = options.deliveryId ?? randomUUID();
  const secret = source.secrets[0]!;
  const now = Math.floor(Date.now() / 1000);
  const hmac = (algorithm: string, key: string | Buffer, content: string) => createHmac(algorithm, key).update(content);

  switch (source.adapter) {
    case 'shopify': {
      const topic = options.topic ?? 'orders/create';
      const body = JSON.stringify({ id: Number(eventId) || eventId, email: 'sample@example.com', total_price: '10.00' });
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-shopify-hmac-sha256': hmac('sha256', secret, body).digest('base64'),
          'x-shopify-webhook-id': deliveryId,
          'x-shopify-event-id': eventId,
          'x-shopify-topic': topic,
          'x-shopify-triggered-at': new Date().toISOString(),
        },
      };
    }
    case 'shopify-flow': {
      const body = JSON.stringify({ action_run_id: eventId, handle: options.topic ?? 'sample-action', properties: {} });
      return {
        body,
        headers: { 'content-type': 'application/json', 'x-shopify-hmac-sha256': hmac('sha256', secret, body).digest('base64') },
      };
    }
    case 'stripe': {
      // Stripe's event IDs begin evt_; one given whole is kept as it is.
      const id = eventId.startsWith('evt_') ? eventId : `evt_${eventId}`;
      const body = JSON.stringify({ id, type: options.topic ?? 'charge.succeeded', created: now, data: {} });
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'stripe-signature': `t=${now},v1=${hmac('sha256', secret, `${now}.${body}`).digest('hex')}`,
        },
      };
    }
    case 'github': {
      const body = JSON.stringify({ action: 'opened', issue: { number: 1 } });
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-hub-signature-256': `sha256=${hmac('sha256', secret, body).digest('hex')}`,
          'x-github-delivery': options.eventId ?? randomUUID(),
          'x-github-hook-id': options.deliveryId ?? '1',
          'x-github-event': options.topic ?? 'issues',
        },
      };
    }
    case 'standard-webhooks': {
      const id = options.eventId ?? `msg_${eventId}`;
      const body = JSON.stringify({ type: options.topic ?? 'sample.created', timestamp: new Date().toISOString(), data: {} });
      const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(now),
          'webhook-signature': `v1,${hmac('sha256', key, `${id}.${now}.${body}`).digest('base64')}`,
        },
      };
    }
    case 'slack': {
      const body = JSON.stringify({ type: 'event_callback', event_id: options.eventId ?? `Ev${eventId}`, event_time: now, event: { type: options.topic ?? 'app_mention', text: 'sample' } });
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-slack-request-timestamp': String(now),
          'x-slack-signature': `v0=${hmac('sha256', secret, `v0:${now}:${body}`).digest('hex')}`,
        },
      };
    }
    case 'twilio': {
      // An incoming SMS, as Twilio posts it: form-encoded, the URL and the sorted parameters signed.
      // Twilio's IDs are read only where they look like its SIDs: an --event-id that is not one is made into one.
      const hex = /^[0-9a-f]{1,32}$/i.test(eventId) ? eventId.padStart(32, '0') : createHash('sha256').update(eventId).digest('hex').slice(0, 32);
      const sid = /^[A-Z]{2}[0-9a-fA-F]+$/.test(eventId) ? eventId : `SM${hex}`;
      const fields: Record<string, string> = { AccountSid: 'AC00000000000000000000000000000000', Body: 'sample', From: '+15005550006', MessageSid: sid, SmsSid: sid, SmsStatus: options.topic ?? 'received', To: '+15005550001' };
      const signed = Object.keys(fields).sort().reduce((text, name) => text + name + fields[name], signedUrl(source, options.path));
      return {
        body: new URLSearchParams(fields).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': hmac('sha1', secret, signed).digest('base64'), 'i-twilio-idempotency-token': deliveryId },
      };
    }
    case 'square': {
      const body = JSON.stringify({ merchant_id: 'SAMPLE', type: options.topic ?? 'payment.updated', event_id: eventId, created_at: new Date().toISOString(), data: { type: 'payment', id: 'sample', object: {} } });
      return { body, headers: { 'content-type': 'application/json', 'x-square-hmacsha256-signature': hmac('sha256', secret, signedUrl(source, options.path) + body).digest('base64') } };
    }
    case 'paddle': {
      const id = eventId.startsWith('evt_') ? eventId : `evt_${eventId}`;
      const body = JSON.stringify({ event_id: id, event_type: options.topic ?? 'transaction.completed', occurred_at: new Date().toISOString(), notification_id: `ntf_${deliveryId}`, data: {} });
      return { body, headers: { 'content-type': 'application/json', 'paddle-signature': `ts=${now};h1=${hmac('sha256', secret, `${now}:${body}`).digest('hex')}` } };
    }
    case 'woocommerce': {
      // Modified at a fixed time, so that sending one --event-id twice is one event, as one state of an order is.
      const body = JSON.stringify({ id: Number(eventId) || eventId, status: 'processing', total: '10.00', date_created_gmt: '2024-05-01T12:00:00', date_modified_gmt: '2024-05-01T12:00:00' });
      const topic = options.topic ?? 'order.created';
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-wc-webhook-signature': hmac('sha256', secret, body).digest('base64'),
          'x-wc-webhook-id': '1',
          'x-wc-webhook-topic': topic,
          'x-wc-webhook-resource': topic.split('.')[0]!,
          'x-wc-webhook-event': topic.split('.').slice(1).join('.'),
          'x-wc-webhook-delivery-id': randomUUID(),
        },
      };
    }
    case 'sendgrid':
      throw new SampleError("a sendgrid source verifies with SendGrid's public key, so only SendGrid can sign for it: use the Event Webhook settings' \"Test Your Integration\"");
    case 'twitch': {
      // The message ID is the delivery's and the event's; it is signed with the timestamp as Twitch writes it.
      const id = options.eventId ?? randomUUID();
      const type = options.topic ?? 'channel.follow';
      const sentAt = new Date().toISOString();
      const subscription = { id: randomUUID(), status: 'enabled', type, version: '1', cost: 0, condition: { broadcaster_user_id: '12826' }, created_at: sentAt };
      const body = JSON.stringify({ subscription, event: { user_id: '1337', user_login: 'sample_user', broadcaster_user_id: '12826', followed_at: sentAt } });
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'twitch-eventsub-message-id': id,
          'twitch-eventsub-message-retry': '0',
          'twitch-eventsub-message-type': 'notification',
          'twitch-eventsub-message-timestamp': sentAt,
          'twitch-eventsub-subscription-type': type,
          'twitch-eventsub-subscription-version': '1',
          'twitch-eventsub-message-signature': `sha256=${hmac('sha256', secret, `${id}${sentAt}${body}`).digest('hex')}`,
        },
      };
    }
    case 'zoom': {
      // Zoom names an event by its body: the same --event-id makes the same body (its event_ts the start of the
      // day, not now), so sending it twice shows the second deduplicated.
      const eventTs = options.eventId === undefined ? Date.now() : new Date().setUTCHours(0, 0, 0, 0);
      const body = JSON.stringify({
        event: options.topic ?? 'meeting.started',
        event_ts: eventTs,
        payload: { account_id: 'sample-account', object: { id: eventId, uuid: eventId, topic: 'Sample meeting', host_id: 'sample-host' } },
      });
      return {
        body,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'x-zm-request-timestamp': String(now),
          'x-zm-signature': `v0=${hmac('sha256', secret, `v0:${now}:${body}`).digest('hex')}`,
        },
      };
    }
    case 'meta': {
      // A WhatsApp message: Meta's own ID of it (wamid.…) names the event.
      const id = eventId.startsWith('wamid.') ? eventId : `wamid.${eventId}`;
      const value = {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
        messages: [{ from: '16505551234', id, timestamp: String(now), type: 'text', text: { body: 'sample' } }],
      };
      const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '102290129340398', changes: [{ value, field: options.topic ?? 'messages' }] }] });
      return {
        body,
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${hmac('sha256', secret, body).digest('hex')}` },
      };
    }
    case 'hubspot': {
      // One event in HubSpot's list; its ID is what the event ID names, in the account and subscription of the sample.
      const body = JSON.stringify([
        { eventId: Number(eventId) || eventId, subscriptionId: 1, portalId: 1, appId: 1, occurredAt: Date.now(), subscriptionType: options.topic ?? 'contact.creation', attemptNumber: 0, objectId: 1, changeSource: 'CRM' },
      ]);
      const timestamp = String(Date.now());
      const uri = hubspotSignedUri(source.publicUrl!, options.path);
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-hubspot-request-timestamp': timestamp,
          'x-hubspot-signature-v3': hmac('sha256', secret, `POST${uri}${body}${timestamp}`).digest('base64'),
        },
      };
    }
    case 'gitlab': {
      const body = JSON.stringify({ object_kind: options.topic ?? 'push', ref: 'refs/heads/main', project: { id: 1 } });
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-gitlab-token': secret,
          'x-gitlab-event': 'Push Hook',
          'x-gitlab-event-uuid': options.eventId ?? randomUUID(),
          'idempotency-key': deliveryId,
        },
      };
    }
    case 'linear': {
      // A linear topic is `type.action` (`Issue.update`).
      const topic = options.topic ?? 'Issue.create';
      const dot = topic.lastIndexOf('.');
      const [type, action] = dot < 0 ? [topic, 'create'] : [topic.slice(0, dot), topic.slice(dot + 1)];
      const body = JSON.stringify({
        action,
        type,
        // Linear names a change by its entity and the time of the action: dated the start of today, the same
        // --event-id names the same change when sent again.
        createdAt: new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000).toISOString(),
        data: { id: options.eventId ?? randomUUID(), title: 'sample' },
        webhookTimestamp: Date.now(),
      });
      return {
        body,
        headers: { 'content-type': 'application/json', 'linear-signature': hmac('sha256', secret, body).digest('hex'), 'linear-delivery': deliveryId, 'linear-event': type },
      };
    }
    case 'typeform': {
      const body = JSON.stringify({
        event_id: eventId,
        event_type: options.topic ?? 'form_response',
        form_response: { form_id: 'sample', token: randomUUID(), submitted_at: new Date().toISOString(), answers: [] },
      });
      return { body, headers: { 'content-type': 'application/json', 'typeform-signature': `sha256=${hmac('sha256', secret, body).digest('base64')}` } };
    }
    case 'generic-hmac': {
      const options_ = source.hmac!;
      const document: Record<string, unknown> = { data: {} };
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const place = (field: { header: string } | { pointer: string } | undefined, value: string) => {
        if (!field) return;
        if ('header' in field) headers[field.header.toLowerCase()] = value;
        else setPointer(document, field.pointer, value);
      };
      place(options_.eventId, eventId);
      place(options_.deliveryId, deliveryId);
      place(options_.topic, options.topic ?? 'sample');
      place(options_.occurredAt, new Date().toISOString());
      const body = JSON.stringify(document);
      if (options_.timestampHeader) headers[options_.timestampHeader.toLowerCase()] = String(now);
      const content = options_.signedPayload === 'timestamp.body' ? `${now}.${body}` : body;
      headers[options_.signatureHeader.toLowerCase()] =
        options_.signaturePrefix + hmac(options_.algorithm, secret, content).digest(options_.encoding);
      return { body, headers };
    }
  }
}

/** The URL Twilio and Square sign: the source's public origin and the path the sample is posted to. */
function signedUrl(source: SourceConfig, path: string | undefined): string {
  if (source.publicUrl === undefined) throw new SampleError(`a ${source.adapter} source signs its publicUrl, and this one has none`);
  if (path === undefined) throw new Error('a sample of a sender that signs its URL needs the path it is posted to');
  return new URL(source.publicUrl).origin + path;
}

function setPointer(document: Record<string, unknown>, pointer: string, value: string): void {
  const keys = pointerTokens(pointer);
  let node = document;
  for (const key of keys.slice(0, -1)) {
    node[key] ??= {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}
