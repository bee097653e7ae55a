import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { duration } from './duration.ts';

/**
 * What an alert can be about. Tasks entering a state that waits for a person; a destination paused after a 401
 * or 403; a source whose deliveries keep failing verification (a wrong or rotated secret); work left unresolved
 * too long.
 */
export const ALERT_CONDITIONS = [
  'needs_review',
  'outcome_unknown',
  'failed',
  'awaiting_approval',
  'destination_paused',
  'signature_failures',
  'unresolved_age',
] as const;
export type AlertCondition = (typeof ALERT_CONDITIONS)[number];

export const ALERT_FORMATS = ['slack', 'json'] as const;

export const alertSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/, message: 'an http(s) URL, e.g. a Slack incoming webhook' }),
    format: z.enum(ALERT_FORMATS).describe('slack: an incoming-webhook body with text; json: a JSON event'),
    on: z
      .array(z.enum(ALERT_CONDITIONS))
      .min(1, 'name at least one condition')
      .refine((on) => new Set(on).size === on.length, { message: 'a condition is named twice' }),
    signingSecret: z
      .string()
      .refine((value) => decodes(value), { message: 'not a Standard Webhooks secret: "whsec_" and base64' })
      .optional()
      .describe('json only: messages carry Standard Webhooks headers signed with it'),
    minIntervalSeconds: z.int().min(1).default(60).describe('at most one message per condition this often'),
    unresolvedAge: duration.prefault('1h').describe('unresolved_age opens once the oldest unresolved task is older'),
  })
  .refine((alert) => alert.signingSecret === undefined || alert.format === 'json', {
    message: 'signingSecret signs json messages; Slack verifies nothing of it',
    path: ['signingSecret'],
  });
export type AlertConfig = z.output<typeof alertSchema>;

function decodes(secret: string): boolean {
  try {
    new Webhook(secret);
    return true;
  } catch {
    return false;
  }
}
