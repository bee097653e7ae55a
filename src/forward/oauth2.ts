/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4) for an action's `auth.oauth2`: a token per action, fetched once
 * for every attempt and lookup that needs it meanwhile, kept until shortly before its `expires_in`, and dropped
 * for a new one on the first 401 the action answers with it. The grant itself is oauth4webapi's; its requests go
 * through the forwarder's undici pools, as every other request to a downstream does.
 *
 * Tokens are kept in this process only: never stored, logged or shown, and masked in any answer that echoes one.
 */
import * as oauth from 'oauth4webapi';
import { fetch } from 'undici';
import { maskOf, type Mask } from '../config/mask.ts';
import type { OAuth2Config } from '../config/auth.ts';
import type { Pools } from './pools.ts';

/**
 * A token for the next request, or why there is none: the token endpoint could not be asked or was overloaded
 * (`unreachable`: try later), or it refused the client (`refused`: a person must fix the config or the client).
 */
export type TokenOutcome = { token: string } | { unreachable: string } | { refused: string };

interface Held {
  token: string;
  /** performance.now() after which it is fetched again; Infinity when the server gave no `expires_in`. */
  renewAt: number;
  /** Fetched because the action answered 401 to the one before: a 401 to this one is the action's refusal. */
  afterRefusal: boolean;
}

/** Renewed this long before it expires, or a tenth of its life when that is shorter. */
const RENEW_BEFORE_MS = 60_000;
/** Tokens kept for the mask: the current one of each action and a few before it, which a slow answer may echo. */
const MASKED_TOKENS = 64;

/** Status codes of a token endpoint that say "not now" rather than "not you". */
const TRY_LATER = (status: number) => status >= 500 || status === 408 || status === 429;

export class Tokens {
  readonly #pools: Pools;
  /** A stopping worker's: a token request still out is cut short, as a request to a downstream is. */
  readonly #release: AbortSignal | undefined;
  readonly #held = new Map<string, Held>();
  readonly #fetching = new Map<string, Promise<TokenOutcome>>();
  /** The next fetch of an action replaces a token its API refused. */
  readonly #refusedBefore = new Set<string>();
  readonly #seen: string[] = [];
  #mask: Mask = (text) => text;

  constructor(pools: Pools, release?: AbortSignal) {
    this.#pools = pools;
    this.#release = release;
  }

  /**
   * The action's token: the one held while it is fresh, else one fetch shared by every request that asks meanwhile.
   * `key` names the action; `timeoutMs` bounds the token request as the action's own requests are bounded.
   */
  token(key: string, config: OAuth2Config, timeoutMs: number): Promise<TokenOutcome> {
    const held = this.#held.get(key);
    if (held !== undefined && performance.now() < held.renewAt) return Promise.resolve({ token: held.token });
    let fetching = this.#fetching.get(key);
    if (fetching === undefined) {
      fetching = this.#fetch(key, config, timeoutMs).finally(() => this.#fetching.delete(key));
      this.#fetching.set(key, fetching);
    }
    return fetching;
  }

  /**
   * The action answered 401 to a request that carried `token`. True when the request counts as not sent, to go
   * again with a new token: the first 401 to a token, or one to a token already replaced. False when the token was
   * itself fetched after a 401: the API refuses the client, not its token.
   */
  refused(key: string, token: string): boolean {
    const held = this.#held.get(key);
    if (held === undefined || held.token !== token) return true;
    if (held.afterRefusal) return false;
    this.#held.delete(key);
    this.#refusedBefore.add(key);
    return true;
  }

  /** A request with the action's token succeeded: a later 401 is again first taken for an expired token. */
  accepted(key: string, token: string): void {
    const held = this.#held.get(key);
    if (held?.token === token) held.afterRefusal = false;
  }

  /** Every token this process has held lately, masked: what the action's answers may be kept with. */
  mask(text: string): string {
    return this.#mask(text);
  }

  async #fetch(key: string, config: OAuth2Config, timeoutMs: number): Promise<TokenOutcome> {
    const tokenUrl = new URL(config.tokenUrl);
    const server: oauth.AuthorizationServer = { issuer: tokenUrl.origin, token_endpoint: tokenUrl.href };
    const client: oauth.Client = { client_id: config.clientId };
    const clientAuth = config.clientAuth === 'body' ? oauth.ClientSecretPost(config.clientSecret) : oauth.ClientSecretBasic(config.clientSecret);
    const parameters = new URLSearchParams();
    if (config.scope !== undefined) parameters.set('scope', config.scope);
    if (config.audience !== undefined) parameters.set('audience', config.audience);
    const pool = this.#pools.for(tokenUrl.origin, timeoutMs);
    let response: Response;
    try {
      response = await oauth.clientCredentialsGrantRequest(server, client, clientAuth, parameters, {
        // The pool of the token endpoint's origin: its connections kept alive and bounded as a downstream's are.
        [oauth.customFetch]: (url, init) => fetch(url, { ...init, dispatcher: pool }) as unknown as Promise<Response>,
        // An http:// token URL is the config's choice, as an http:// action URL is.
        [oauth.allowInsecureRequests]: tokenUrl.protocol === 'http:',
        signal: this.#release ? AbortSignal.any([AbortSignal.timeout(timeoutMs), this.#release]) : AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      return { unreachable: `the token endpoint could not be reached: ${causeOf(error)}` };
    }
    if (TRY_LATER(response.status)) {
      await response.body?.cancel();
      return { unreachable: `the token endpoint answered ${response.status} ${response.statusText}`.trim() };
    }
    try {
      const answer = await oauth.processClientCredentialsResponse(server, client, response);
      const lifeMs = typeof answer.expires_in === 'number' ? answer.expires_in * 1000 : Infinity;
      const renewAt = performance.now() + lifeMs - Math.min(RENEW_BEFORE_MS, lifeMs / 10);
      this.#held.set(key, { token: answer.access_token, renewAt, afterRefusal: this.#refusedBefore.delete(key) });
      this.#remember(answer.access_token);
      return { token: answer.access_token };
    } catch (error) {
      return { refused: `the token endpoint refused the client: ${refusal(response, error)}` };
    }
  }

  #remember(token: string): void {
    this.#seen.push(token);
    if (this.#seen.length > MASKED_TOKENS) this.#seen.shift();
    this.#mask = maskOf(this.#seen);
  }
}

/** What the token endpoint said, in its own terms: RFC 6749 §5.2's `error` and `error_description` when it gave them. */
function refusal(response: Response, error: unknown): string {
  const line = `${response.status} ${response.statusText}`.trim();
  if (error instanceof oauth.ResponseBodyError) return `${line}: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`;
  if (error instanceof oauth.WWWAuthenticateChallengeError) return `${line}: ${error.cause.map((challenge) => challenge.scheme).join(', ')} challenge`;
  return response.ok ? `${line}, but not a token: ${causeOf(error)}` : line;
}

function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
