import { z } from 'zod';
import { secret } from './secret.ts';

/**
 * The client-credentials grant (RFC 6749 §4.4) of an action that calls an API with expiring tokens. The secret is
 * a credential as `headers` values are: no message quotes it, and the mask hides it wherever an answer echoes it.
 */
export const oauth2Schema = z.strictObject({
  tokenUrl: z.url({ protocol: /^https?$/ }).describe('the authorization server\'s token endpoint'),
  clientId: z.string().min(1),
  clientSecret: secret.describe('use ${NAME}'),
  scope: z.string().min(1).optional().describe('space-separated scopes asked for'),
  audience: z.string().min(1).optional().describe('the API the token is for, where the server asks for one (Auth0, Okta)'),
  clientAuth: z
    .enum(['basic', 'body'])
    .default('basic')
    .describe('"basic": client ID and secret in an Authorization: Basic header; "body": in the form, for servers that take only that'),
});
export type OAuth2Config = z.output<typeof oauth2Schema>;
