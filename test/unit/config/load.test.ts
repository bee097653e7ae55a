import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../../../scripts/write-json-schema.ts';
import { ConfigError, parseConfig } from '../../../src/config/load.ts';
import { runCli } from '../../support/process.ts';

const valid = {
  sources: {
    shop: {
      adapter: 'shopify',
      secrets: ['${SHOP_SECRET}'],
      actions: { crm: { url: 'https://crm.example/tasks', idempotency: 'key' } },
    },
  },
};

/** The problems of a config given as an object, or as the text of a file. */
function problems(config: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(typeof config === 'string' ? config : JSON.stringify(config), 'test.json', env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the config to be refused');
}

/** A config of one shopify source, `shop`, with these actions, and what else is given beside its sources. */
const shopWith = (actions: object, beside: object = {}) => ({ ...beside, sources: { shop: { adapter: 'shopify', secrets: ['s'], actions } } });

/** Two steps that wait for each other, so neither ever starts. */
const WAITING_FOR_EACH_OTHER = { a: { url: 'https://a.example', after: 'b' }, b: { url: 'https://b.example', after: 'a' } };

/** Values set on a copy of the valid config at dotted paths, each change with every problem it is then refused with. */
const REFUSED: { name: string; set: Record<string, unknown>; said: unknown[] }[] = [
  {
    name: 'refuses a step that waits for an action the source does not have',
    set: {
      'sources.shop.actions.mail': { url: 'https://mail.example', after: 'nothing' },
    },
    said: [
      'sources.shop.actions.mail.after: no sibling action "nothing" in this source',
    ],
  },
  {
    name: 'refuses a task key that is not a template of known placeholders, and steps that wait for each other',
    set: {
      'sources.shop.taskKey': '{eventID}',
      'sources.shop.actions': { ...WAITING_FOR_EACH_OTHER, c: { url: 'https://c.example', after: 'a' } },
    },
    said: [
      'sources.shop.actions.a.after: steps that wait for each other never start: a → b → a',
      'sources.shop.actions.b.after: steps that wait for each other never start: b → a → b',
      expect.stringMatching(/^sources\.shop\.taskKey: \{eventID\}: not a placeholder/),
    ],
  },
  {
    name: "lists a step that never starts beside the source's other problems, not only once they are fixed",
    set: {
      'sources.shop.adapter': 'shopfy',
      'sources.shop.actions': {
        ...WAITING_FOR_EACH_OTHER,
        a: { ...WAITING_FOR_EACH_OTHER.a, url: 'not a url' },
        c: { url: 'https://c.example', after: 'nothing', timeoutMs: -1 },
        d: 'https://d.example',
      },
    },
    said: [
      expect.stringMatching(/^sources\.shop\.adapter: /),
      expect.stringMatching(/^sources\.shop\.actions\.a\.url: /),
      expect.stringMatching(/^sources\.shop\.actions\.c\.timeoutMs: /),
      expect.stringMatching(/^sources\.shop\.actions\.d: /),
      'sources.shop.actions.a.after: steps that wait for each other never start: a → b → a',
      'sources.shop.actions.b.after: steps that wait for each other never start: b → a → b',
      'sources.shop.actions.c.after: no sibling action "nothing" in this source',
    ],
  },
  {
    name: "lists a task key's problem beside the source's others, not only once they are fixed",
    set: {
      'sources.shop.adapter': 'shopfy',
      'sources.shop.taskKey': '{eventID}',
    },
    said: [
      expect.stringMatching(/^sources\.shop\.adapter: /),
      expect.stringMatching(/^sources\.shop\.taskKey: \{eventID\}: not a placeholder/),
    ],
  },
  {
    name: 'refuses unknown keys, so a typo is not silently ignored, and names the key meant',
    set: {
      'sources.shop.actions.crm.timeoutMS': 5,
    },
    said: ['sources.shop.actions.crm: unknown key "timeoutMS": did you mean "timeoutMs"?'],
  },
  {
    name: 'names the nearest known key wherever a key is unknown, or the keys there are when none is near',
    set: {
      'limit': {},
      'sources.shop.actions.crm.transfrom': '$',
      'sources.shop.actions.crm.idempotncy': 'key',
      'sources.shop.secret': 'x',
      'sources.shop.actions.crm.lookup': { url: 'https://crm.example/t?k={key}', found: {}, heaers: {} },
      'destinations': { 'https://crm.example': { rateLimit: { perSecond: 1, brust: 2 }, retries: 3 } },
    },
    said: [
      'destinations["https://crm.example"].rateLimit: unknown key "brust": did you mean "burst"?',
      'destinations["https://crm.example"]: unknown key "retries": the keys here are rateLimit, maxInFlight',
      'sources.shop.actions.crm.lookup: unknown key "heaers": did you mean "headers"?',
      'sources.shop.actions.crm: unknown keys "transfrom" (did you mean "transform"?), "idempotncy" (did you mean "idempotency"?)',
      'sources.shop: unknown key "secret": did you mean "secrets"?',
      '(root): unknown key "limit": did you mean "limits"?',
    ],
  },
  {
    name: 'names the nearest option of a misspelt one, and keeps the list of options when none is near',
    set: {
      'sources.shop.adapter': 'shopfy',
      'sources.shop.actions.crm.idempotency': 'keys',
      'sources.shop.actions.crm.method': 'DELETE',
    },
    said: [
      'sources.shop.adapter: "shopfy" is not an option: did you mean "shopify"?',
      'sources.shop.actions.crm.idempotency: "keys" is not an option: did you mean "key"?',
      'sources.shop.actions.crm.method: Invalid option: expected one of "POST"|"PUT"|"PATCH"',
    ],
  },
  {
    name: 'refuses a topic with spaces around it and a url placeholder that is not one, which would never work as meant',
    set: {
      'sources.shop.actions.crm.topics': ['orders/create '],
      'sources.shop.actions.crm.url': 'https://crm.example/orders/{eventID}',
    },
    said: [
      'sources.shop.actions.crm.url: {eventID}: not a placeholder; use {eventId}, {deliveryId}, {topic}, {key}, {header:NAME}, {body:/pointer} or {sent:/pointer}',
      "sources.shop.actions.crm.topics[0]: spaces around a topic: it would never match a delivery's topic",
    ],
  },
];

describe('config', () => {
  it('fills ${NAME} from the environment and applies the contract defaults', () => {
    const { config } = parseConfig(JSON.stringify(valid), 'test.json', { SHOP_SECRET: 's3cret' });
    const shop = config.sources.shop!;
    expect(shop.secrets).toEqual(['s3cret']);
    expect(shop.taskKey).toBe('{eventId}');
    expect(shop.maxBodyBytes).toBe(1024 * 1024);
    expect(shop.readTimeoutMs).toBe(15_000);
    expect(shop.actions.crm).toMatchObject({
      timeoutMs: 10_000,
      maxAttempts: 8,
      keyRetention: 24 * 3600 * 1000,
      backoff: { initialMs: 1000, maxMs: 3_600_000 },
    });
  });

  it('names a missing environment variable with where it is used', () => {
    expect(problems(valid)).toEqual(['sources.shop.secrets[0]: environment variable SHOP_SECRET is not set']);
  });

  it('takes ${NAME:-default} when NAME is unset, and reports that it did', () => {
    const withDefault = structuredClone(valid);
    withDefault.sources.shop.secrets = ['${SHOP_SECRET:-dev-secret}'];
    const loaded = parseConfig(JSON.stringify(withDefault), 'test.json', {});
    expect(loaded.config.sources.shop!.secrets).toEqual(['dev-secret']);
    expect(loaded.defaulted).toEqual(['SHOP_SECRET']);
  });

  it('fills ${file:PATH} from a mounted secret, relative to the config file, less its last line break', () => {
    const folder = mkdtempSync(join(tmpdir(), 'oncehook-file-values-'));
    writeFileSync(join(folder, 'shop-secret'), 'from-a-file\n');
    writeFileSync(join(folder, 'padded'), ' padded\n');
    const fromFile = structuredClone(valid);
    fromFile.sources.shop.secrets = ['${file:shop-secret}', `\${file:${join(folder, 'shop-secret')}}`, '${file:${CREDENTIALS_DIRECTORY}/shop-secret}'];
    const loaded = parseConfig(JSON.stringify(fromFile), join(folder, 'oncehook.json'), { CREDENTIALS_DIRECTORY: folder });
    expect(loaded.config.sources.shop!.secrets).toEqual(['from-a-file', 'from-a-file', 'from-a-file']);

    fromFile.sources.shop.secrets = ['${file:absent}', '${file:padded}', '${file:${CREDENTIALS_DIRECTORY}/shop-secret}'];
    let refused: string[] = [];
    try {
      parseConfig(JSON.stringify(fromFile), join(folder, 'oncehook.json'), {});
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      refused = error.problems;
    }
    expect(refused).toEqual([
      'sources.shop.secrets[0]: cannot read absent: no such file (ENOENT)',
      'sources.shop.secrets[2]: environment variable CREDENTIALS_DIRECTORY is not set',
      'sources.shop.secrets[1]: starts or ends with whitespace (a pasted line break?), which the key would keep: remove it',
    ]);
    expect(refused.join('\n')).not.toContain('padded\n');
  });

  it('lists every problem at once, each with its JSON path', () => {
    const found = problems(
      {
        sources: {
          shop: {
            adapter: 'shopfy',
            secrets: [],
            actions: {
              crm: { url: 'not a url', idempotency: 'maybe', keyRetention: 'a day', lookup: 'https://x/y' },
              mail: { url: 'https://mail.example', after: 'nothing' },
            },
          },
          hooks: { adapter: 'generic-hmac', secrets: ['x'], actions: {} },
        },
      },
      {},
    );
    const paths = found.map((p) => p.slice(0, p.indexOf(':')));
    expect(paths).toEqual(
      expect.arrayContaining([
        'sources.shop.adapter',
        'sources.shop.secrets',
        'sources.shop.actions.crm.url',
        'sources.shop.actions.crm.idempotency',
        'sources.shop.actions.crm.keyRetention',
        'sources.shop.actions.crm.lookup',
        'sources.hooks.hmac',
      ]),
    );
  });

  for (const { name, set, said } of REFUSED) {
    it(name, () => {
      const config = structuredClone(valid) as any;
      for (const [path, value] of Object.entries(set)) {
        const keys = path.split('.');
        const last = keys.pop()!;
        keys.reduce((at, key) => at[key], config)[last] = value;
      }
      expect(problems(config, { SHOP_SECRET: 'x' })).toEqual(said);
    });
  }

  it('refuses secrets the Standard Webhooks scheme cannot decode, each at its path and without its value', () => {
    const good = `whsec_${Buffer.from('thirty-two bytes of secret key!!').toString('base64')}`;
    const found = problems({
      sources: {
        hooks: {
          adapter: 'standard-webhooks',
          secrets: [good, 'whsec_abc$def', 'hunter2!'],
          actions: { crm: { url: 'https://crm.example', signingSecret: 'not base64!' }, mail: { url: 'https://mail.example', signingSecret: good } },
        },
      },
    });
    expect(found).toEqual([
      'sources.hooks.secrets[1]: a standard-webhooks secret must be base64, optionally prefixed with "whsec_"',
      'sources.hooks.secrets[2]: a standard-webhooks secret must be base64, optionally prefixed with "whsec_"',
      'sources.hooks.actions.crm.signingSecret: not a Standard Webhooks secret: "whsec_" and base64',
    ]);
    expect(found.join('\n')).not.toMatch(/abc\$def|hunter2|not base64!/);

    // Beside the source's other problems, not only once those are fixed.
    const withTypos = problems({
      sources: {
        hooks: {
          adapter: 'standard-webhooks',
          secrets: ['hunter2!'],
          retentoin: '30d',
          actions: { crm: { url: 'https://crm.example', signingSecret: 'not base64!' } },
        },
        shop: { adapter: 'shopfy', secrets: ['x'], actions: { crm: { url: 'https://crm.example', signingSecret: 'not base64!' } } },
      },
    });
    expect(withTypos).toEqual(expect.arrayContaining([
      'sources.hooks.secrets[0]: a standard-webhooks secret must be base64, optionally prefixed with "whsec_"',
      'sources.hooks.actions.crm.signingSecret: not a Standard Webhooks secret: "whsec_" and base64',
      'sources.shop.actions.crm.signingSecret: not a Standard Webhooks secret: "whsec_" and base64',
    ]));
    expect(withTypos.some((p) => p.startsWith('sources.hooks: ') && p.includes('retentoin'))).toBe(true);
    expect(withTypos.some((p) => p.startsWith('sources.shop.adapter'))).toBe(true);
  });

  it('refuses a blank secret and one with whitespace around it, each at its path and without its value', () => {
    const signing = `whsec_${Buffer.from('thirty-two bytes of secret key!!').toString('base64')}`;
    const found = problems(
      {
        sources: {
          shop: { adapter: 'shopify', secrets: ['${SHOP_SECRET}', '', '\n\t', 'pasted-secret\n'], actions: {} },
          acme: {
            adapter: 'generic-hmac',
            secrets: [' '],
            hmac: { signatureHeader: 'X-Sig', eventId: { header: 'X-Id' } },
            actions: { crm: { url: 'https://crm.example', signingSecret: ` ${signing}` } },
          },
          hooks: { adapter: 'standard-webhooks', secrets: [`${signing}\r\n`], actions: {} },
        },
      },
      { SHOP_SECRET: ' ' },
    );
    const blank = 'a secret cannot be empty or only whitespace: anyone could sign with it';
    const padded = 'starts or ends with whitespace (a pasted line break?), which the key would keep: remove it';
    expect(found).toEqual([
      `sources.shop.secrets[0]: ${blank}`,
      `sources.shop.secrets[1]: ${blank}`,
      `sources.shop.secrets[2]: ${blank}`,
      `sources.shop.secrets[3]: ${padded}`,
      `sources.acme.secrets[0]: ${blank}`,
      `sources.acme.actions.crm.signingSecret: ${padded}`,
      `sources.hooks.secrets[0]: ${padded}`,
    ]);
    expect(found.join('\n')).not.toMatch(/pasted-secret|whsec_/);
  });

  it('refuses a generic-hmac timestamp the signature does not cover: its window would stop no replay', () => {
    const acme = (hmac: object) => ({
      sources: { acme: { adapter: 'generic-hmac', secrets: ['s3cret'], actions: {}, hmac: { signatureHeader: 'X-Sig', eventId: { header: 'X-Id' }, ...hmac } } },
    });
    const unsigned = expect.stringMatching(/^sources\.acme\.hmac\.timestampHeader: the timestamp is not signed/);
    expect(problems(acme({ timestampHeader: 'X-Time' }))).toEqual([unsigned]);
    expect(problems(acme({ timestampHeader: 'X-Time', signedPayload: 'body' }))).toEqual([unsigned]);
    expect(() => parseConfig(JSON.stringify(acme({ timestampHeader: 'X-Time', signedPayload: 'timestamp.body' })), 'test.json', {})).not.toThrow();
  });

  it("refuses a meta source without verifyToken: it could never answer Meta's GET check", () => {
    const whatsapp = (extra: object) => ({ sources: { wa: { adapter: 'meta', secrets: ['app-secret'], actions: {}, ...extra } } });
    expect(problems(whatsapp({}))).toEqual([expect.stringMatching(/^sources\.wa\.verifyToken: a meta source needs verifyToken: the Verify Token /)]);
    expect(parseConfig(JSON.stringify(whatsapp({ verifyToken: 'meatyhamhock' })), 'test.json', {}).config.sources.wa!.verifyToken).toBe('meatyhamhock');
  });

  it('refuses a twilio or square source without the publicUrl it signs, at the source\'s path', () => {
    const source = (adapter: string, extra: object = {}) => ({ adapter, secrets: ['s3cret'], actions: {}, ...extra });
    expect(problems({ sources: { sms: source('twilio'), pos: source('square'), bot: source('slack') } })).toEqual([
      expect.stringMatching(/^sources\.sms\.publicUrl: a twilio source needs "publicUrl", the origin twilio calls/),
      expect.stringMatching(/^sources\.pos\.publicUrl: a square source needs "publicUrl"/),
    ]);
    const publicUrl = 'https://hooks.example.com';
    expect(() => parseConfig(JSON.stringify({ sources: { sms: source('twilio', { publicUrl }), pos: source('square', { publicUrl }) } }), 'test.json', {})).not.toThrow();
  });

  it('tells an unset variable once, not also as the ${NAME} it left in the value', () => {
    const config = structuredClone(valid) as any;
    config.sources.hooks = {
      adapter: 'standard-webhooks',
      secrets: ['${HOOKS_SECRET}'],
      actions: { crm: { url: '${CRM_URL}/tasks', after: '${STEP}', timeoutMs: '${CRM_TIMEOUT}' } },
    };
    expect(problems(config, { SHOP_SECRET: 'x' })).toEqual([
      'sources.hooks.secrets[0]: environment variable HOOKS_SECRET is not set',
      'sources.hooks.actions.crm.url: environment variable CRM_URL is not set',
      'sources.hooks.actions.crm.after: environment variable STEP is not set',
      'sources.hooks.actions.crm.timeoutMs: environment variable CRM_TIMEOUT is not set',
      // Setting it would not mend this one: a variable fills a string, and timeoutMs is a number.
      'sources.hooks.actions.crm.timeoutMs: Invalid input: expected number, received string',
    ]);
    // Set, the same values are checked as any other.
    const env = { SHOP_SECRET: 'x', HOOKS_SECRET: 'not base64!', CRM_URL: 'ftp://crm.example', STEP: 'crm', CRM_TIMEOUT: '5' };
    expect(problems(config, env).map((p) => p.slice(0, p.indexOf(': ')))).toEqual([
      'sources.hooks.actions.crm.url',
      'sources.hooks.actions.crm.timeoutMs',
      'sources.hooks.actions.crm.after',
      'sources.hooks.secrets[0]',
    ]);
  });

  it('names the rule a source or action name breaks, and refuses a config with no source', () => {
    const config = structuredClone(valid) as any;
    config.sources.shop.actions['Welcome Mail'] = config.sources.shop.actions.crm;
    expect(problems(config, { SHOP_SECRET: 'x' })).toEqual([
      'sources.shop.actions["Welcome Mail"]: this name is not allowed: lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 63 characters',
    ]);
    expect(problems({ sources: {} })).toEqual(['sources: no source is configured: every delivery would be answered 404']);
  });

  it('lists what a misnamed source or action holds beside its name, not only once it is renamed', () => {
    const sourceRule = 'this name is not allowed: letters, digits, "-" and "_", starting with a letter or digit, at most 63 characters';
    const actionRule = 'this name is not allowed: lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 63 characters';
    const found = problems({
      sources: {
        'Shop!': {
          adapter: 'nope',
          secrets: [],
          actions: { 'Welcome Mail': { url: 'not a url', after: 'crm' }, crm: { url: 'https://crm.example', after: 'Welcome Mail' } },
        },
      },
    });
    expect(found).toEqual([
      expect.stringMatching(/^sources\["Shop!"\]\.adapter: /),
      expect.stringMatching(/^sources\["Shop!"\]\.secrets: /),
      expect.stringMatching(/^sources\["Shop!"\]\.actions\["Welcome Mail"\]\.url: /),
      expect.stringMatching(/^sources\["Shop!"\]\.actions\.crm\.after: /),
      `sources["Shop!"].actions["Welcome Mail"]: ${actionRule}`,
      `sources["Shop!"]: ${sourceRule}`,
    ]);
  });

  it('refuses a duration past 100 years, where the database\'s timestamps run out', () => {
    const config = structuredClone(valid) as any;
    config.sources.shop.retention = '3650000d';
    config.sources.shop.actions.crm.keyRetention = '99999999999999999999d';
    expect(problems(config, { SHOP_SECRET: 'x' })).toEqual([
      'sources.shop.actions.crm.keyRetention: at most 100 years ("36500d")',
      'sources.shop.retention: at most 100 years ("36500d")',
    ]);
    config.sources.shop.retention = '36500d';
    config.sources.shop.actions.crm.keyRetention = '876000h';
    expect(() => parseConfig(JSON.stringify(config), 'test.json', { SHOP_SECRET: 'x' })).not.toThrow();
  });

  it('refuses a lookup that is not an http(s) URL once {key} is filled in', () => {
    for (const lookup of ['127.0.0.1:9090/mail?key={key}', 'htp:/127.0.0.1/x?key={key}', 'ftp://x.example/{key}']) {
      const config = structuredClone(valid) as any;
      config.sources.shop.actions.crm.lookup = lookup;
      expect(problems(config, { SHOP_SECRET: 'x' }), lookup).toEqual(['sources.shop.actions.crm.lookup: not an http(s) URL once its placeholders are filled in']);
    }
    const config = structuredClone(valid) as any;
    config.sources.shop.actions.crm.lookup = 'https://crm.example/effects?key={key}';
    expect(() => parseConfig(JSON.stringify(config), 'test.json', { SHOP_SECRET: 'x' })).not.toThrow();
  });

  it('takes placeholders in the path and query of a url and a lookup, and refuses one before the path', () => {
    const config = structuredClone(valid) as any;
    const crm = config.sources.shop.actions.crm;
    crm.url = 'https://crm.example/contacts/{body:/customer/id}?by={header:x-shop}&order={sent:/order}&task={key}';
    crm.method = 'PATCH';
    crm.lookup = { url: 'https://crm.example/tasks?external_id={body:/id}', found: { total: { $gt: 0 } }, referencePointer: '/results/0/id' };
    expect(() => parseConfig(JSON.stringify(config), 'test.json', { SHOP_SECRET: 'x' })).not.toThrow();
    for (const url of ['https://{body:/host}/contacts', 'https://crm.example{body:/path}', 'https://crm.{topic}.example/x', 'http://crm.example:{body:/port}/x']) {
      crm.url = url;
      crm.lookup = url.replace('/x', '/{key}');
      const said = problems(config, { SHOP_SECRET: 'x' });
      expect(said, url).toContain(
        'sources.shop.actions.crm.url: a placeholder before the path: the scheme, host and port are always written out, so no delivery can choose where the request goes',
      );
      expect(said.some((problem) => problem.startsWith('sources.shop.actions.crm.lookup: a placeholder before the path')), url).toBe(true);
    }
    crm.url = 'https://crm.example/x';
    crm.lookup = { url: 'https://crm.example/tasks?all=1', found: {} };
    expect(problems(config, { SHOP_SECRET: 'x' })).toEqual([
      'sources.shop.actions.crm.lookup.url: a lookup URL needs a placeholder: {key}, the task ID, or a field like {body:/id}',
    ]);
  });

  it('takes an action that calls a real API: method, secret headers, idempotencyHeader, transform, filter, a search lookup', () => {
    const api = {
      url: 'https://api.crm.example/contacts',
      method: 'PUT',
      headers: { Authorization: 'Bearer ${CRM_TOKEN}' },
      idempotencyHeader: 'X-Request-Key',
      transform: '{"email": email, "external_id": $taskId}',
      filter: { body: { total_price: { $gte: 100 } }, topic: { $in: ['orders/create'] } },
      lookup: { url: 'https://api.crm.example/contacts?external_id={key}', found: { results: { id: { $exist: true } } } },
    };
    const withApi = { ...valid, destinations: { 'https://api.crm.example': { rateLimit: { perSecond: 10 }, maxInFlight: 4 } } };
    withApi.sources = { shop: { ...valid.sources.shop, actions: { crm: api } } } as never;
    const { config } = parseConfig(JSON.stringify(withApi), 'test.json', { SHOP_SECRET: 's', CRM_TOKEN: 't0k3n' });
    expect(config.sources.shop!.actions.crm).toMatchObject({ method: 'PUT', headers: { Authorization: 'Bearer t0k3n' }, idempotencyHeader: 'X-Request-Key' });
    expect(config.destinations['https://api.crm.example']).toEqual({ rateLimit: { perSecond: 10 }, maxInFlight: 4 });
    // Without it set, a header's variable is a start-up error at its path, as every other one is.
    expect(problems(withApi, { SHOP_SECRET: 's' })).toEqual(['sources.shop.actions.crm.headers.Authorization: environment variable CRM_TOKEN is not set']);
  });

  it('refuses what would break an action that calls an API, each at its path, never quoting a header value', () => {
    const action = (extra: object) => ({ url: 'https://api.crm.example/contacts', ...extra });
    const found = problems(
      shopWith(
        {
          parse: action({ transform: '{"email": email' }),
          unbound: action({ transform: '{"id": $taskID}' }),
          op: action({ filter: { body: { total: { $gtt: 5 } }, header: {} } }),
          own: action({ headers: { 'Idempotency-Key': 'x', 'Oncehook-Source': 'x', Host: 'x', 'Content-Type': 'text/plain' } }),
          renamed: action({ idempotencyHeader: 'X-Key', headers: { 'x-key': 'x' } }),
          value: action({ headers: { Authorization: 'Bearer secret-value\n' } }),
          method: action({ method: 'DELETE' }),
          search: action({ lookup: { url: 'https://api.crm.example/c?id={key}', found: { $in: 'x' } } }),
          nofound: action({ lookup: { url: 'https://api.crm.example/c?id={key}' } }),
        },
        {
          destinations: {
            'https://api.crm.example/v1': { maxInFlight: 2 },
            'https://API.crm.example': { maxInFlight: 2 },
            'https://elsewhere.example': { rateLimit: { perSecond: 5 } },
            'https://api.crm.example': {},
          },
        },
      ),
      {},
    );
    const at = (path: string) => found.filter((p) => p.startsWith(`${path}: `)).map((p) => p.slice(path.length + 2));
    expect(at('sources.shop.actions.parse.transform')).toEqual([expect.stringMatching(/^does not parse at character \d+: .*\(JSONata S0\d+\)$/)]);
    expect(at('sources.shop.actions.unbound.transform')).toEqual([expect.stringMatching(/\$taskID/)]);
    expect(at('sources.shop.actions.op.filter.body.total.$gtt')).toEqual(['unknown operator "$gtt": did you mean "$gt" or "$gte"?']);
    expect(at('sources.shop.actions.op.filter.header')).toEqual(['unknown key "header": did you mean "headers"?']);
    expect(at('sources.shop.actions.own.headers["Idempotency-Key"]')).toEqual([expect.stringMatching(/carries the task ID/)]);
    expect(at('sources.shop.actions.own.headers["Oncehook-Source"]')).toEqual([expect.stringMatching(/Oncehook-\*/)]);
    expect(at('sources.shop.actions.own.headers.Host')).toEqual([expect.stringMatching(/oncehook sets Host itself/)]);
    expect(at('sources.shop.actions.own.headers["Content-Type"]')).toEqual([expect.stringMatching(/without a transform/)]);
    expect(at('sources.shop.actions.renamed.headers["x-key"]')).toEqual([expect.stringMatching(/idempotencyHeader/)]);
    expect(at('sources.shop.actions.value.headers.Authorization')).toEqual([expect.stringMatching(/whitespace/)]);
    expect(at('sources.shop.actions.method.method')).toHaveLength(1);
    expect(at('sources.shop.actions.search.lookup.found.$in')).toEqual(['$in needs a list of values']);
    expect(at('sources.shop.actions.nofound.lookup.found')).toEqual([expect.stringMatching(/needs found/)]);
    expect(at('destinations["https://api.crm.example/v1"]')).toEqual([expect.stringMatching(/^not an origin: write it as "https:\/\/api\.crm\.example"/)]);
    expect(at('destinations["https://API.crm.example"]')).toEqual([expect.stringMatching(/^not an origin/)]);
    expect(at('destinations["https://elsewhere.example"]')).toEqual([expect.stringMatching(/^no action sends to or looks up at https:\/\/elsewhere\.example; the origins in use are: https:\/\/api\.crm\.example/)]);
    expect(at('destinations["https://api.crm.example"]')).toEqual([expect.stringMatching(/set rateLimit, maxInFlight or both/)]);
    expect(found.join('\n')).not.toContain('secret-value');
  });

  it('refuses a hubspot source without the publicUrl HubSpot signs, at its path', () => {
    const crm = { adapter: 'hubspot', secrets: ['s'], actions: { crm: { url: 'https://crm.example/tasks' } } };
    expect(problems({ sources: { crm } })).toEqual([expect.stringMatching(/^sources\.crm\.publicUrl: a hubspot source needs the URL HubSpot calls/)]);
    expect(() => parseConfig(JSON.stringify({ sources: { crm: { ...crm, publicUrl: 'https://hooks.example.com' } } }), 'test.json', {})).not.toThrow();
  });

  it('refuses an alert with an unknown condition, a url that is not http(s), or a format that does not exist', () => {
    const found = problems(
      {
        ...valid,
        publicUrl: 'ftp://oncehook.example',
        alerts: {
          ops: { url: 'mailto:ops@example.com', format: 'teams', on: ['failed', 'failures'] },
          twice: { url: 'https://hooks.example/x', format: 'json', on: ['failed', 'failed'], minIntervalSeconds: 0 },
          unsigned: { url: 'https://hooks.example/x', format: 'slack', on: ['failed'], signingSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
          Ops: { url: 'https://hooks.example/x', format: 'slack', on: [] },
        },
      },
      { SHOP_SECRET: 's' },
    );
    expect(found).toEqual([
      expect.stringMatching(/^publicUrl: /),
      expect.stringMatching(/^alerts\.ops\.url: an http\(s\) URL/),
      expect.stringMatching(/^alerts\.ops\.format: Invalid option: expected one of "slack"\|"json"/),
      expect.stringMatching(/^alerts\.ops\.on\[1\]: Invalid option: expected one of "needs_review"\|"outcome_unknown"\|"failed"/),
      expect.stringMatching(/^alerts\.twice\.on: a condition is named twice/),
      expect.stringMatching(/^alerts\.twice\.minIntervalSeconds: /),
      expect.stringMatching(/^alerts\.unsigned\.signingSecret: signingSecret signs json messages/),
      expect.stringMatching(/^alerts\.Ops\.on: name at least one condition/),
      expect.stringMatching(/^alerts\.Ops: this name is not allowed/),
    ]);
  });

  // Named after a header oncehook writes itself, the task ID went out in its place: `Host: t_…` to the API's
  // server, the task ID as the body's content type, and `Content-Length` or `Transfer-Encoding` refused by undici
  // before a byte was sent, on every attempt until they ran out.
  it('refuses an idempotencyHeader that names a header oncehook writes itself', () => {
    const action = (idempotencyHeader: string, extra: object = {}) => ({ url: 'https://api.crm.example/contacts', idempotencyHeader, ...extra });
    const found = problems(
      shopWith({
        host: action('Host'),
        length: action('content-length'),
        chunked: action('Transfer-Encoding'),
        type: action('Content-Type', { transform: '{"a": 1}' }),
        signed: action('webhook-id', { signingSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }),
        fine: action('X-Request-Key'),
      }),
      {},
    );
    const at = (name: string) => found.filter((p) => p.startsWith(`sources.shop.actions.${name}.idempotencyHeader: `));
    expect(at('host')).toEqual([expect.stringMatching(/oncehook sets Host itself/)]);
    expect(at('length')).toEqual([expect.stringMatching(/oncehook sets content-length itself/)]);
    expect(at('chunked')).toEqual([expect.stringMatching(/oncehook sets Transfer-Encoding itself/)]);
    expect(at('type')).toEqual([expect.stringMatching(/oncehook sets Content-Type itself: it is the type of the bytes sent/)]);
    expect(at('signed')).toEqual([expect.stringMatching(/webhook-\* headers/)]);
    expect(at('fine')).toEqual([]);
  });

  it('takes auth.oauth2 with its defaults, and refuses an Authorization header beside it without quoting the secret', () => {
    const config = structuredClone(valid) as any;
    config.sources.shop.actions.crm.auth = { oauth2: { tokenUrl: 'https://login.crm.example/oauth/token', clientId: 'oncehook', clientSecret: '${CRM_SECRET}' } };
    const { config: parsed } = parseConfig(JSON.stringify(config), 'test.json', { SHOP_SECRET: 'x', CRM_SECRET: 'cs-1f2e3d' });
    expect(parsed.sources.shop!.actions.crm!.auth).toEqual({
      oauth2: { tokenUrl: 'https://login.crm.example/oauth/token', clientId: 'oncehook', clientSecret: 'cs-1f2e3d', clientAuth: 'basic' },
    });
    config.sources.shop.actions.crm.headers = { Authorization: 'Bearer static' };
    config.sources.shop.actions.crm.lookup = { url: 'https://crm.example/t?id={key}', headers: { authorization: 'Bearer static' }, found: {} };
    config.sources.shop.actions.crm.auth.oauth2.clientAuth = 'header';
    const said = problems(config, { SHOP_SECRET: 'x', CRM_SECRET: ' cs-1f2e3d' });
    expect(said).toEqual([
      'sources.shop.actions.crm.auth.oauth2.clientSecret: starts or ends with whitespace (a pasted line break?), which the key would keep: remove it',
      'sources.shop.actions.crm.auth.oauth2.clientAuth: Invalid option: expected one of "basic"|"body"',
      'sources.shop.actions.crm.headers.Authorization: auth.oauth2 sends the Authorization header: remove this one',
      'sources.shop.actions.crm.lookup.headers.authorization: auth.oauth2 sends the Authorization header: remove this one',
    ]);
    expect(said.join('\n')).not.toContain('cs-1f2e3d');
  });

  // Both spellings went through, and the one written last in the file replaced the other on the wire: which token
  // an API received depended on the order of two keys nobody sees as two.
  it('refuses a header given twice in different cases, in an action and in its lookup', () => {
    const found = problems(
      shopWith({
        crm: {
          url: 'https://api.crm.example/contacts',
          headers: { authorization: 'Bearer old-token', Authorization: 'Bearer new-token' },
          lookup: { url: 'https://api.crm.example/c?id={key}', headers: { 'X-Api-Key': 'a', 'x-api-key': 'b' }, found: {} },
        },
      }),
      {},
    );
    expect(found).toEqual([
      'sources.shop.actions.crm.headers.Authorization: given twice (authorization, Authorization): header names are case-insensitive, so one would replace the other',
      'sources.shop.actions.crm.lookup.headers["x-api-key"]: given twice (X-Api-Key, x-api-key): header names are case-insensitive, so one would replace the other',
    ]);
    expect(found.join('\n')).not.toMatch(/token|Bearer/);
  });

  it('says where JSON is broken, by line and column, and what was expected there', () => {
    const text = '{\n  "sources": {\n    "shop": { "adapter": "shopify", }\n  }\n}';
    expect(() => parseConfig(text, 'broken.json', {})).toThrow(/broken\.json: 1 problem/);
    expect(problems(text)).toEqual(['(root): not valid JSON: line 3, column 37: a comma before "}": JSON allows none after the last property']);
  });

  it('the shipped example config is valid and the JSON Schema for editors is current', () => {
    const example = readFileSync(new URL('../../../oncehook.config.json', import.meta.url), 'utf8');
    expect(() => parseConfig(example, 'oncehook.config.json', {})).not.toThrow();
    const committed = readFileSync(new URL('../../../oncehook.schema.json', import.meta.url), 'utf8');
    expect(committed, 'run `npm run schema` after changing src/config/schema.ts').toBe(configJsonSchema());
  });
});

describe('oncehook check-config', () => {
  it('exits 0 for a valid file and 1 with every problem for a broken one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-config-'));
    const good = join(dir, 'good.json');
    const bad = join(dir, 'bad.json');
    writeFileSync(good, JSON.stringify(valid));
    const misnamed = { adapter: 'nope', secrets: [], actions: { crm: { url: 'not a url', idempotency: 'maybe' } } };
    writeFileSync(bad, JSON.stringify({ sources: { 'Shop!': misnamed } }));

    const ok = await runCli(['check-config', good], { SHOP_SECRET: 'x' });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('shop (shopify) → crm');

    const broken = await runCli(['check-config', bad, '--json']);
    expect(broken.code).toBe(1);
    const paths = (JSON.parse(broken.stdout) as { problems: string[] }).problems.map((p) => p.slice(0, p.indexOf(': ')));
    expect(paths).toEqual([
      'sources["Shop!"].adapter',
      'sources["Shop!"].secrets',
      'sources["Shop!"].actions.crm.url',
      'sources["Shop!"].actions.crm.idempotency',
      'sources["Shop!"]',
    ]);
  });
});
