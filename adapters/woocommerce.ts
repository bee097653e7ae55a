/**
 * WooCommerce (https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks, and WC_Webhook in
 * plugins/woocommerce/includes/class-wc-webhook.php, which this follows): `X-WC-Webhook-Signature` is base64
 * HMAC-SHA256, keyed by the webhook's secret, of the raw body. There is no timestamp. A new webhook is first sent
 * a ping, `webhook_id=<id>` form-encoded with no signature and no X-WC-* header (WC_Webhook::deliver_ping), which
 * must be answered 200 or the shop reports the URL broken: it is answered as a handshake, unverified because
 * nothing in it is signed, makes no task, and is never recorded (`unsigned`): anyone can send it.
 *
 * Names: WooCommerce sends no event ID, and `X-WC-Webhook-Delivery-ID` is `wp_hash(webhook id . unix second)`
 * (get_new_delivery_id): every delivery of a webhook within one second shares it, so it names no delivery. The
 * event is the topic, the resource's `id` and its `date_modified_gmt` (`order.updated:1234:2024-05-01T12:00:00`):
 * WooCommerce builds the body from the resource when it sends, so two sends of one state carry one event, and two
 * webhooks of one shop delivering it are one event; `order.deleted` carries only `{"id"}`, and a body with no
 * `id` (an `action.*` topic) is named by its SHA-256. The delivery is the webhook (`X-WC-Webhook-ID`) and the
 * event. WooCommerce does not resend a failed delivery (it disables a webhook after more than five failures in a
 * row) and waits a minute for an answer (`'timeout' => MINUTE_IN_SECONDS` in deliver).
 */
import { randomUUID } from 'node:crypto';
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { isoDate, optionalString, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, hmac, requireSignatureHeader, sha256Hex } from './signature.ts';

const PING = /^webhook_id=(\d{1,20})$/;
const signatureOf = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'base64', body);

/** WooCommerce's `*_gmt` dates are UTC without a zone ("2024-05-01T12:00:00"): read as local time otherwise. */
function gmtDate(value: unknown): Date | null {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(value) ? isoDate(`${value}Z`) : null;
}

function resourceKey(json: unknown, body: Uint8Array): string {
  const id = jsonPointer(json, '/id');
  if (typeof id === 'number' && !Number.isSafeInteger(id)) throw new InputError('invalid_identity', 'the resource id (body "id") is a number JSON cannot carry exactly');
  if (typeof id !== 'number' && typeof id !== 'string') {
    if (id !== undefined) throw new InputError('invalid_identity', 'the resource id (body "id") is not a string or an integer');
    return `sha256:${sha256Hex(body).slice(0, 32)}`;
  }
  const modified = jsonPointer(json, '/date_modified_gmt');
  return typeof modified === 'string' && modified !== '' ? `${id}:${modified}` : String(id);
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    // WC_Webhook::deliver sets MINUTE_IN_SECONDS, and a delivery answered 503 is never sent again: waiting is better.
    ackTimeoutMs: 60_000,
    signatureHeaders: ['x-wc-webhook-signature'],
    verify(request) {
      const { headers, body } = request;
      const ping = headers.has('x-wc-webhook-signature') ? null : PING.exec(Buffer.from(body).toString('latin1'));
      if (ping) {
        const id = `webhook_id=${ping[1]}`;
        return {
          deliveryId: id,
          eventId: id,
          topic: 'ping',
          occurredAt: null,
          json: { webhook_id: ping[1] },
          handshake: { status: 200, contentType: 'application/json', body: JSON.stringify({ webhook_id: ping[1] }) },
          unsigned: true,
        };
      }
      const signature = requireSignatureHeader(headers, 'X-WC-Webhook-Signature');
      const sign = (secret: string) => signatureOf(secret, body);
      if (!anySignatureMatches(secrets, sign, [signature], 'base64')) {
        throw new SignatureError("X-WC-Webhook-Signature does not match the body under any configured secret (the webhook's Secret)");
      }
      const json = parseJson(body);
      const topic = optionalString(headers.get('x-wc-webhook-topic'));
      if (topic === null) throw new InputError('missing_identity', 'the request verified but has no X-WC-Webhook-Topic header');
      const eventId = requireId(`${topic}:${resourceKey(json, body)}`, 'event id (topic : body "id" : "date_modified_gmt")');
      const hookId = headers.get('x-wc-webhook-id')?.trim() || 'unknown-webhook';
      return {
        deliveryId: requireId(`${hookId}:${eventId}`, 'delivery id (X-WC-Webhook-ID : event id)'),
        eventId,
        topic,
        occurredAt: gmtDate(jsonPointer(json, '/date_modified_gmt')) ?? gmtDate(jsonPointer(json, '/date_created_gmt')),
        json,
      };
    },
  };
}

/** Modified at a fixed time, so that sending one --event-id twice is one event, as one state of an order is. */
function sample({ asked, eventId, secret }: SampleRequest): Sample {
  const body = JSON.stringify({ id: Number(eventId) || eventId, status: 'processing', total: '10.00', date_created_gmt: '2024-05-01T12:00:00', date_modified_gmt: '2024-05-01T12:00:00' });
  const topic = asked.topic ?? 'order.created';
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-wc-webhook-signature': signatureOf(secret, body),
      'x-wc-webhook-id': '1',
      'x-wc-webhook-topic': topic,
      'x-wc-webhook-resource': topic.split('.')[0]!,
      'x-wc-webhook-event': topic.split('.').slice(1).join('.'),
      'x-wc-webhook-delivery-id': randomUUID(),
    },
  };
}

export const woocommerce = sender({
  name: 'woocommerce',
  refusesDeliveryId: () => "a woocommerce delivery is named by its webhook's ID and its event (X-WC-Webhook-Delivery-ID names no one delivery)",
  adapter,
  sample,
});
