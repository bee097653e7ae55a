import { parse, protocol, type PGlite, type QueryOptions, type Results } from '@electric-sql/pglite';
import { MARK } from './prepared.ts';

interface Prepared {
  name: string;
  /** The parameters' type OIDs, as PostgreSQL inferred them when it parsed the statement. */
  paramTypes: number[];
}

/**
 * PGlite's `query` makes six calls into its WebAssembly for every statement — parse, describe, bind,
 * describe, execute, sync — so each call parses, analyses and plans the text afresh; on the embedded
 * gateway the hot statements (ingest's batch, the claim, the finish, the next due time) ran ~1.4 times per
 * delivery, and their parse and bind were a third of their time. A statement marked `PREPARED` is parsed
 * once here under a name, and then sent as bind, describe, execute and sync in one call, which took well under
 * half the time (docs/performance-history.md).
 *
 * The same locks as `query` (PGlite's transaction lock, then its query lock), the same serializers,
 * parsers and errors; notifications are delivered to listeners as usual. Inside a transaction drizzle runs
 * statements through PGlite's transaction object, which this leaves alone.
 */
export function preparePglite(client: PGlite): void {
  const plain = client.query.bind(client);
  const statements = new Map<string, Prepared>();

  async function prepare(text: string): Promise<Prepared> {
    const known = statements.get(text);
    if (known) return known;
    const name = `oncehook_${statements.size + 1}`;
    const { messages } = await client.execProtocol(
      Buffer.concat([protocol.serialize.parse({ name, text }), protocol.serialize.describe({ type: 'S', name }), protocol.serialize.sync()]),
      { syncToFs: false },
    );
    const prepared = { name, paramTypes: parse.parseDescribeStatementResults(messages) };
    statements.set(text, prepared);
    return prepared;
  }

  async function run<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    return client._runExclusiveTransaction(() =>
      client.runExclusive(async () => {
        const { name, paramTypes } = await prepare(text);
        const values = params.map((value, i) => {
          if (value === null || value === undefined) return null;
          const type = paramTypes[i]!;
          const serialize = options?.serializers?.[type] ?? client.serializers[type];
          return serialize ? serialize(value) : String(value);
        });
        const { messages } = await client.execProtocol(
          Buffer.concat([
            protocol.serialize.bind({ statement: name, values }),
            protocol.serialize.describe({ type: 'P' }),
            protocol.serialize.execute({}),
            protocol.serialize.sync(),
          ]),
          { syncToFs: false },
        );
        await client.syncToFs();
        return parse.parseResults(messages, client.parsers, options)[0] as Results<T>;
      }),
    );
  }

  client.query = (<T>(text: string, params?: unknown[], options?: QueryOptions) =>
    text.startsWith(MARK) ? run<T>(text, params, options) : plain<T>(text, params, options)) as PGlite['query'];
}
