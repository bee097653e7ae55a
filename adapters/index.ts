/** The registry of senders: each is a module of its own, found here by the name a source gives as its `adapter`. */
import type { z } from 'zod';
import { genericHmac } from './generic-hmac.ts';
import { github } from './github.ts';
import { gitlab } from './gitlab.ts';
import { hubspot } from './hubspot.ts';
import { linear } from './linear.ts';
import { meta } from './meta.ts';
import { paddle } from './paddle.ts';
import { pagerduty } from './pagerduty.ts';
import type { Sender, SenderSource } from './sender.ts';
import { sendgrid } from './sendgrid.ts';
import { shopifyFlow } from './shopify-flow.ts';
import { shopify } from './shopify.ts';
import { slack } from './slack.ts';
import { square } from './square.ts';
import { standardWebhooks } from './standard-webhooks.ts';
import { stripe } from './stripe.ts';
import { twilio } from './twilio.ts';
import { twitch } from './twitch.ts';
import { typeform } from './typeform.ts';
import type { Adapter } from './types.ts';
import { woocommerce } from './woocommerce.ts';
import { zoom } from './zoom.ts';

/** In the order the config's JSON Schema lists them. */
const REGISTERED = [
  shopify,
  shopifyFlow,
  stripe,
  github,
  standardWebhooks,
  genericHmac,
  slack,
  sendgrid,
  twitch,
  zoom,
  meta,
  twilio,
  square,
  paddle,
  woocommerce,
  hubspot,
  gitlab,
  linear,
  typeform,
  pagerduty,
] as const;

export type AdapterName = (typeof REGISTERED)[number]['name'];
export const ADAPTER_NAMES = REGISTERED.map((one) => one.name) as [AdapterName, ...AdapterName[]];

/** Each sender's options read as unknown: its own schema checked them in the config. */
export const SENDERS: readonly Sender<unknown>[] = REGISTERED;
const BY_NAME = new Map(SENDERS.map((one) => [one.name, one]));

export function senderNamed(name: string): Sender<unknown> | undefined {
  return BY_NAME.get(name);
}

type FieldOf<One> = One extends Sender<unknown, string, infer Field> ? Field : never;
type OptionsOf<One> = One extends Sender<infer Options, string, string> ? Options : never;

/** Each sender's own options by the source's field that holds them (generic-hmac's `hmac`), for the config's schema. */
export const SENDER_OPTIONS = Object.fromEntries(
  REGISTERED.flatMap(({ options }) => (options ? [[options.field, options.schema.optional().describe(options.description)]] : [])),
) as { [One in (typeof REGISTERED)[number] as FieldOf<One>]: z.ZodOptional<z.ZodType<OptionsOf<One>>> };

/** A source as the config has it: its sender's name, its secrets, and the settings and options its sender reads. */
export interface AdapterSource extends Omit<SenderSource<unknown>, 'options'> {
  adapter: string;
  readonly [setting: string]: unknown;
}

/** A source's sender, and the settings its adapter and samples are made from. */
export function senderOf(source: AdapterSource): { sender: Sender<unknown>; settings: SenderSource<unknown> } {
  const sender = senderNamed(source.adapter);
  if (sender === undefined) throw new Error(`no sender is named "${source.adapter}"`);
  const { secrets, publicUrl, verifyToken } = source;
  return { sender, settings: { secrets, publicUrl, verifyToken, options: sender.options && source[sender.options.field] } };
}

/** The adapter a source names, built once at start from its secrets and settings. */
export function createAdapter(source: AdapterSource): Adapter {
  const { sender, settings } = senderOf(source);
  return sender.adapter(settings);
}
