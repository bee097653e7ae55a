/** The adapter a source names, built once at start from its secrets (and, for generic-hmac, its options). */
import { genericHmac, type GenericHmacOptions } from './generic-hmac.ts';
import { github } from './github.ts';
import { gitlab } from './gitlab.ts';
import { hubspot } from './hubspot.ts';
import { linear } from './linear.ts';
import { meta } from './meta.ts';
import { paddle } from './paddle.ts';
import { sendgrid } from './sendgrid.ts';
import { shopifyFlow } from './shopify-flow.ts';
import { shopify } from './shopify.ts';
import { slack } from './slack.ts';
import { square } from './square.ts';
import { standardWebhooks } from './standard-webhooks.ts';
import { stripe } from './stripe.ts';
import { twitch } from './twitch.ts';
import { typeform } from './typeform.ts';
import type { Adapter, AdapterName } from './types.ts';
import { zoom } from './zoom.ts';
import { twilio } from './twilio.ts';
import { woocommerce } from './woocommerce.ts';

export interface AdapterSource {
  adapter: AdapterName;
  secrets: readonly string[];
  hmac?: GenericHmacOptions | undefined;
  /** Where the sender calls this source: those that sign the URL they called (Twilio, Square) are checked against it. */
  publicUrl?: string | undefined;
  /** What a sender's GET handshake must present (Meta's hub.verify_token). */
  verifyToken?: string | undefined;
}

export function createAdapter(source: AdapterSource): Adapter {
  const { secrets } = source;
  switch (source.adapter) {
    case 'shopify':
      return shopify({ secrets });
    case 'shopify-flow':
      return shopifyFlow({ secrets });
    case 'stripe':
      return stripe({ secrets });
    case 'github':
      return github({ secrets });
    case 'standard-webhooks':
      return standardWebhooks({ secrets });
    case 'slack':
      return slack({ secrets });
    case 'sendgrid':
      return sendgrid({ secrets });
    case 'twitch':
      return twitch({ secrets });
    case 'zoom':
      return zoom({ secrets });
    case 'meta':
      // The config schema already requires it; this guards callers that bypass it.
      if (source.verifyToken === undefined) throw new Error('the meta adapter needs the source\'s "verifyToken"');
      return meta({ secrets, verifyToken: source.verifyToken });
    case 'twilio':
      return twilio({ secrets, publicUrl: source.publicUrl });
    case 'square':
      return square({ secrets, publicUrl: source.publicUrl });
    case 'paddle':
      return paddle({ secrets });
    case 'woocommerce':
      return woocommerce({ secrets });
    case 'hubspot':
      // The config schema requires a hubspot source's publicUrl; this guards callers that bypass it.
      if (!source.publicUrl) throw new Error('the hubspot adapter needs the source\'s "publicUrl": HubSpot signs the URL it calls');
      return hubspot({ secrets, publicUrl: source.publicUrl });
    case 'gitlab':
      return gitlab({ secrets });
    case 'linear':
      return linear({ secrets });
    case 'typeform':
      return typeform({ secrets });
    case 'generic-hmac':
      // The config schema already requires these options; this guards callers that bypass it.
      if (!source.hmac) throw new Error('the generic-hmac adapter needs its "hmac" options');
      return genericHmac({ secrets, hmac: source.hmac });
  }
}
