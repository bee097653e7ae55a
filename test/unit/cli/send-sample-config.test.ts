import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../support/process.ts';

// A gateway served with `--config acme.json`: its source is in that file, not in ./oncehook.config.json.
const SECRET = 'acme-sample-secret';
const dir = mkdtempSync(join(tmpdir(), 'oncehook-sample-config-'));
const file = join(dir, 'acme.json');
const received: Array<{ url: string; headers: IncomingHttpHeaders; body: string }> = [];
let server: Server;
let url: string;

beforeAll(async () => {
  writeFileSync(file, JSON.stringify({ sources: { acme: { adapter: 'shopify', secrets: [SECRET], actions: { crm: { url: 'https://crm.example/' } } } } }));
  server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    received.push({ url: request.url!, headers: request.headers, body });
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"decision":"accepted"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const signedWithSecret = (request: (typeof received)[number]) =>
  request.headers['x-shopify-hmac-sha256'] === createHmac('sha256', SECRET).update(request.body).digest('base64');

describe('send-sample finds the config the way serve does', () => {
  it('signs with the source of --config FILE, or of ONCEHOOK_CONFIG', async () => {
    const [byOption, byEnvironment] = await Promise.all([
      runCli(['send-sample', 'acme', '--config', file, '--url', url, '--event-id', 'by-option']),
      runCli(['send-sample', 'acme', '--url', url, '--event-id', 'by-env'], { ONCEHOOK_CONFIG: file }),
    ]);
    expect([byOption.code, byEnvironment.code]).toEqual([0, 0]);
    expect(received.map((r) => r.url)).toEqual(['/in/acme', '/in/acme']);
    expect(received.every(signedWithSecret)).toBe(true);
  });

  it('says to pass the gateway\'s config when the source is not in the one it read, or that one cannot be read', async () => {
    const missing = join(dir, 'nope.json');
    const [otherConfig, unreadable] = await Promise.all([
      runCli(['send-sample', 'acme', '--url', url], { ONCEHOOK_CONFIG: undefined }),
      runCli(['send-sample', 'acme', '--config', missing, '--url', url]),
    ]);
    const hint = 'send-sample signs with the config the gateway serves: pass the file it was started with, --config FILE or ONCEHOOK_CONFIG\n';
    expect(otherConfig.code).toBe(2);
    expect(otherConfig.stderr).toBe(`no source "acme" in ./oncehook.config.json; it has: shop, payments, repo\n${hint}`);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toBe(`${missing}: 1 problem\n  cannot read the file: no such file (ENOENT)\n${hint}`);
  });
});
