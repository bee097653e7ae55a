import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One token request as the endpoint read it. */
export interface TokenRequest {
  path: string;
  /** The client as it authenticated: from an Authorization: Basic header, or from the form. */
  clientId: string | null;
  clientSecret: string | null;
  via: 'basic' | 'body' | 'none';
  form: Record<string, string>;
}

/** What one path of the endpoint answers: a token that lives `expiresIn` seconds, else a status (and its JSON). */
export interface TokenScript {
  expiresIn?: number;
  /** Answers for successive requests before tokens are given; each a status, with an OAuth error body for a 4xx. */
  steps?: number[];
}

export interface TokenEndpoint {
  readonly url: string;
  script(path: string, script: TokenScript): void;
  requests(path?: string): TokenRequest[];
  /** The tokens given on `path`, in order. */
  issued(path?: string): string[];
  /** The token the next request on `path` will be given, if it is given one. */
  next(path: string): string;
  close(): Promise<void>;
}

/**
 * An OAuth 2.0 authorization server's token endpoint for the client-credentials grant (RFC 6749 §4.4, errors as
 * §5.2): it gives `access_token`s named after the path and their number, so a test knows the next one in advance.
 */
export async function startTokenEndpoint(): Promise<TokenEndpoint> {
  const scripts = new Map<string, Required<TokenScript>>();
  const received: TokenRequest[] = [];
  const given: { path: string; token: string }[] = [];
  const scriptOf = (path: string) => {
    let script = scripts.get(path);
    if (!script) scripts.set(path, (script = { expiresIn: 3600, steps: [] }));
    return script;
  };
  const tokenFor = (path: string, n: number) => `tok${path.replaceAll('/', '-')}-${n}-9f8e7d6c5b4a`;

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = new URL(request.url ?? '/', 'http://tokens').pathname;
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
      const basic = /^Basic (.+)$/i.exec(request.headers.authorization ?? '');
      const [id, secret] = basic ? Buffer.from(basic[1]!, 'base64').toString().split(':').map(decodeURIComponent) : [form.client_id, form.client_secret];
      received.push({ path, clientId: id ?? null, clientSecret: secret ?? null, via: basic ? 'basic' : form.client_secret ? 'body' : 'none', form });
      const script = scriptOf(path);
      const status = script.steps.shift();
      const json = { 'content-type': 'application/json', 'cache-control': 'no-store' };
      if (status !== undefined) {
        const error = status === 401 ? 'invalid_client' : status === 400 ? 'unauthorized_client' : 'temporarily_unavailable';
        response.writeHead(status, json).end(JSON.stringify({ error, error_description: `the client ${id} is refused` }));
        return;
      }
      const token = tokenFor(path, given.filter((g) => g.path === path).length + 1);
      given.push({ path, token });
      response.writeHead(200, json).end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: script.expiresIn }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    script: (path, script) => void scripts.set(path, { ...scriptOf(path), ...script }),
    requests: (path) => received.filter((r) => path === undefined || r.path === path),
    issued: (path) => given.filter((g) => path === undefined || g.path === path).map((g) => g.token),
    next: (path) => tokenFor(path, given.filter((g) => g.path === path).length + 1),
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
