import { createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { Signature } from '@hubspot/api-client';
// The SDK's webhook helpers alone: the package's index loads its whole REST client.
import { getExpectedBodyHash, getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import type { Delivery } from './deliveries.ts';

/** A key pair of our own, signing as SendGrid signs: ECDSA P-256 over the timestamp and the body. */
export function sendgridSigner() {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const key = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  const signOf = (body: string, timestamp: string) => sign('sha256', Buffer.from(timestamp + body), privateKey).toString('base64');
  return {
    /** The verification key, as SendGrid shows it: a source's secret. */
    key,
    sign: signOf,
    delivery(events: object[], timestamp = String(Math.floor(Date.now() / 1000))): Delivery {
      const body = JSON.stringify(events);
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-twilio-email-event-webhook-signature': signOf(body, timestamp),
          'x-twilio-email-event-webhook-timestamp': timestamp,
        },
      };
    },
  };
}

/** A Slack Events API request, signed as Slack signs: v0=HMAC-SHA256 of "v0:<timestamp>:<body>". */
export function slackDelivery(secret: string, payload: object): Delivery {
  const body = JSON.stringify(payload);
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`,
    },
  };
}

/** A Twitch EventSub message, signed as Twitch signs: sha256=HMAC-SHA256 of message ID + timestamp + body. */
export function twitchDelivery(secret: string, type: 'notification' | 'webhook_callback_verification' | 'revocation', payload: object, messageId: string): Delivery {
  const body = JSON.stringify(payload);
  const timestamp = new Date().toISOString();
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'twitch-eventsub-message-id': messageId,
      'twitch-eventsub-message-retry': '0',
      'twitch-eventsub-message-type': type,
      'twitch-eventsub-message-timestamp': timestamp,
      'twitch-eventsub-message-signature': `sha256=${createHmac('sha256', secret).update(messageId + timestamp + body).digest('hex')}`,
    },
  };
}

/** A Zoom webhook, signed as Zoom signs: v0=HMAC-SHA256 of "v0:<x-zm-request-timestamp>:<body>". */
export function zoomDelivery(secret: string, payload: object): Delivery {
  const body = JSON.stringify(payload);
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    body,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-zm-request-timestamp': timestamp,
      'x-zm-signature': `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`,
    },
  };
}

/** A Meta Graph API webhook, signed as Meta signs: sha256=HMAC-SHA256 of the body under the App Secret. */
export function metaDelivery(secret: string, payload: object): Delivery {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
  };
}

/**
 * A Twilio request as Twilio posts one: form-encoded, signed by the `twilio` SDK's own getExpectedTwilioSignature
 * over the URL it calls (`url`: the source's publicUrl origin and the path) and the parameters.
 */
export function twilioDelivery(authToken: string, url: string, params: Record<string, string>, headers: Record<string, string> = {}): Delivery {
  return {
    body: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': getExpectedTwilioSignature(authToken, url, params), ...headers },
  };
}

/** A JSON body as Twilio signs one (Event Streams): the URL alone, which carries the body's SHA-256 as bodySHA256. */
export function twilioJsonDelivery(authToken: string, url: string, payload: unknown): { url: string; delivery: Delivery } {
  const body = JSON.stringify(payload);
  const signedUrl = `${url}${url.includes('?') ? '&' : '?'}bodySHA256=${getExpectedBodyHash(body)}`;
  return { url: signedUrl, delivery: { body, headers: { 'content-type': 'application/json', 'x-twilio-signature': getExpectedTwilioSignature(authToken, signedUrl, {}) } } };
}

/** A Square notification: base64 HMAC-SHA256 of the notification URL and the body (Square's SDKs only verify). */
export function squareDelivery(signatureKey: string, url: string, payload: object): Delivery {
  const body = JSON.stringify(payload);
  return { body, headers: { 'content-type': 'application/json', 'x-square-hmacsha256-signature': createHmac('sha256', signatureKey).update(url + body).digest('base64') } };
}

/** A Paddle Billing notification: `ts=…;h1=…`, hex HMAC-SHA256 of `ts:body` (Paddle's SDK only verifies). */
export function paddleDelivery(secret: string, payload: object, at = new Date()): Delivery {
  const body = JSON.stringify(payload);
  const ts = Math.floor(at.getTime() / 1000);
  return { body, headers: { 'content-type': 'application/json', 'paddle-signature': `ts=${ts};h1=${createHmac('sha256', secret).update(`${ts}:${body}`).digest('hex')}` } };
}

/** A WooCommerce delivery as WC_Webhook::deliver sends one: base64 HMAC-SHA256 of the body, and its X-WC-* headers. */
export function woocommerceDelivery(secret: string, topic: string, payload: object, webhookId = '7'): Delivery {
  const body = JSON.stringify(payload);
  const [resource, ...event] = topic.split('.');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-wc-webhook-source': 'https://shop.example/',
      'x-wc-webhook-topic': topic,
      'x-wc-webhook-resource': resource!,
      'x-wc-webhook-event': event.join('.'),
      'x-wc-webhook-signature': createHmac('sha256', secret).update(body).digest('base64'),
      'x-wc-webhook-id': webhookId,
      'x-wc-webhook-delivery-id': createHmac('md5', 'wp-salt').update(`${webhookId}${Math.floor(Date.now() / 1000)}`).digest('hex'),
    },
  };
}

/**
 * A HubSpot Webhooks API delivery: a list of events, signed by @hubspot/api-client's v3 signer over
 * POST + the URL HubSpot calls + the body + the timestamp (unix milliseconds).
 */
export function hubspotDelivery(secret: string, url: string, events: object[], timestamp = Date.now()): Delivery {
  const body = JSON.stringify(events);
  const signature = Signature.getSignature('POST', 'v3', { clientSecret: secret, requestBody: body, url, timestamp, signature: '' });
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-hubspot-request-timestamp': String(timestamp), 'x-hubspot-signature-v3': signature },
  };
}

/** A GitLab webhook: its secret token in X-Gitlab-Token, and the delivery headers GitLab 17.4 and later send. */
export function gitlabDelivery(
  token: string,
  payload: object,
  ids: { eventUuid?: string; idempotencyKey?: string; event?: string } = {},
): Delivery {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-gitlab-token': token,
    'x-gitlab-event': ids.event ?? 'Push Hook',
    'x-gitlab-webhook-uuid': randomUUID(),
  };
  if (ids.eventUuid !== undefined) headers['x-gitlab-event-uuid'] = ids.eventUuid;
  if (ids.idempotencyKey !== undefined) headers['idempotency-key'] = ids.idempotencyKey;
  return { body: JSON.stringify(payload), headers };
}

/** A Linear webhook, stamped now in the body's webhookTimestamp and signed as Linear signs: hex HMAC-SHA256 of the body. */
export function linearDelivery(secret: string, payload: object, delivery: string, webhookTimestamp = Date.now()): Delivery {
  const body = JSON.stringify({ ...payload, webhookTimestamp });
  return {
    body,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'linear-signature': createHmac('sha256', secret).update(body).digest('hex'),
      'linear-delivery': delivery,
      'linear-event': String((payload as { type?: unknown }).type ?? ''),
    },
  };
}

/** A Typeform webhook, signed as Typeform's docs show: "sha256=" + base64 HMAC-SHA256 of the body. */
export function typeformDelivery(secret: string, payload: object): Delivery {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: { 'content-type': 'application/json', 'typeform-signature': `sha256=${createHmac('sha256', secret).update(body).digest('base64')}` },
  };
}
