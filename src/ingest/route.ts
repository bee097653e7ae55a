import type { HttpBindings } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import type { Adapter, HandshakeAnswer, Identity } from '../../adapters/types.ts';
import type { Config } from '../config/schema.ts';
import { HttpError, SignatureError, type SignatureCheck } from '../errors.ts';
import { receiptId, sha256Hex } from '../ids.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { outageLog } from '../outage-log.ts';
import type { ReceiptInput, Recorded } from '../store/atomic/record.ts';
import type { Store } from '../store/connect.ts';
import type { RefusedRequest, RejectionLog } from '../store/rejection-log.ts';
import type { AdmissionGate } from './admission.ts';
import { withinBudget } from './budget.ts';
import { TRANSFORM_LIMITS } from '../shape/transform.ts';
import type { Transforms } from '../shape/transforms.ts';
import { KnownReceipts } from './known-receipts.ts';
import { nameTasks, planTasks, type Plan } from './plan-tasks.ts';
import { readBody } from './read-body.ts';
import type { ReceiptWriter } from './receipt-writer.ts';
import { headerRedactor } from './redact.ts';
import { UnknownPathLog } from './unknown-paths.ts';

export interface IngestDeps {
  config: Config;
  adapters: ReadonlyMap<string, Adapter>;
  store: Store;
  logger: Logger;
  metrics: Metrics;
  transforms: Transforms;
  /** Where receipts are recorded: one for the process, shared by the ingest a reload replaces and its successor. */
  writer: ReceiptWriter;
  /** The rate limits and caps, counted for the process across reloads. */
  admission: AdmissionGate;
  /** Told of each delivery answered 401 (or a GET handshake's 403), for the alerts: the gateway's SignatureFailureLog. */
  signatureFailures?: SignatureFailureNotes | null | undefined;
  /** Where refused requests are counted for people to see (`/api/rejections`); absent in tests that need none. */
  rejections?: RejectionLog | null | undefined;
}

/** Where ingest notes the signature checks that failed; ingest and the alerts meet through the database it writes. */
export interface SignatureFailureNotes {
  note(source: string, check: SignatureCheck): void;
}

/** While the database is down, a line every 10 s says how many deliveries failed so far, whatever the senders' rate. */
const INGEST_OUTAGE_REPEAT_MS = 10_000;

/** Part of the sender's timeout kept back for the answer to travel: at most a second, a fifth of short budgets. */
const answerReserveMs = (budgetMs: number) => Math.min(1000, budgetMs / 5);
function answerDeadline(started: number, budgetMs: number): number {
  return started + budgetMs - answerReserveMs(budgetMs);
}

/**
 * The latest a delivery's transforms may start: room left after it for the longest evaluation and for the record,
 * as much as for the answer. Past it the source's transforms are too far behind, and the delivery is answered 503.
 */
function transformStartBy(deadline: number, budgetMs: number): number {
  return deadline - TRANSFORM_LIMITS.timeMs - answerReserveMs(budgetMs);
}

/** The longest ingest waits to learn whether a delivery is known, at most a quarter of the sender's timeout. */
const KNOWN_WAIT_MS = 1000;

/** `POST /in/{source}`: read, verify, name, record in one transaction, answer within the sender's timeout. */
export function ingestRoutes({ config, adapters, store, logger, metrics, transforms, writer, admission, signatureFailures, rejections }: IngestDeps): Hono {
  const app = new Hono();
  /**
   * A refused request (or an unsigned ping, answered but never recorded): a metric, and a count people can read, which
   * says which check of a signature failed (`shown`).
   */
  const refused = (c: Context, source: string, reason: string, shown = reason) => {
    metrics.rejections.inc({ source, reason });
    rejections?.note(source, shown, refusedRequest(c));
  };
  const bodyRate = { minBytesPerSecond: config.limits.minBodyBytesPerSecond, graceMs: config.limits.bodyRateGraceMs };
  const outage = outageLog(logger, {
    level: 'error',
    failing: 'recording a delivery failed',
    recovered: 'deliveries are recorded again',
    repeatEveryMs: INGEST_OUTAGE_REPEAT_MS,
  });
  const redactors = new Map([...adapters].map(([id, adapter]) => [id, headerRedactor(adapter.signatureHeaders)]));
  // Verify, deduplicate, then the rest: a delivery already known runs no filter and no transform. Looked up only for
  // sources that have either; for the others planning costs less than the look-up.
  const known = new KnownReceipts(store.db, logger);
  const looksFirst = new Set(
    Object.entries(config.sources)
      .filter(([, source]) => Object.values(source.actions).some((action) => action.transform !== undefined || action.filter !== undefined))
      .map(([id]) => id),
  );
  const unknownPaths = new UnknownPathLog(logger);
  /** Counted with the other rejections, and logged a line a minute per path rather than a line per request. */
  const unknownSource = (c: Context, message: string): never => {
    refused(c, UNKNOWN, 'unknown_source');
    unknownPaths.note(c.req.method, c.req.path);
    // Answered before anything is read or admitted; a body still on its way is not waited for either.
    const unread = (c.env as Partial<HttpBindings> | undefined)?.incoming?.complete === false;
    throw new HttpError(404, 'unknown_source', message, unread ? { connection: 'close' } : {});
  };
  // `/in/shop/` too: a webhook URL pasted with a trailing slash otherwise had every delivery answered 404.
  app.on('POST', ['/in/:source', '/in/:source/'], async (c) => {
    const started = performance.now();
    const sourceId = c.req.param('source');
    const source = config.sources[sourceId];
    const adapter = adapters.get(sourceId);
    if (!source || !adapter) return unknownSource(c, `no source named "${sourceId}" is configured`);
    // Served by @hono/node-server: Node's own request and response, read and written around the web API.
    const { incoming, outgoing } = c.env as HttpBindings;
    let release = () => {};
    try {
      const read = admission.toRead(sourceId);
      const body = await readBody(incoming, outgoing, { maxBytes: source.maxBodyBytes, timeoutMs: source.readTimeoutMs, ...bodyRate }).finally(read);
      const request = c.req.raw;
      const identity = adapter.verify({
        headers: request.headers,
        body,
        now: new Date(),
        target: targetOf(incoming.url, c.req.url),
        maxItems: source.maxBatchItems,
      });
      if (identity.unsigned && identity.handshake) {
        // Anyone can send one, as often as they like: answered as the sender expects, counted, and never recorded.
        refused(c, sourceId, 'unsigned_ping');
        metrics.ackSeconds.observe({ source: sourceId, status: String(identity.handshake.status) }, (performance.now() - started) / 1000);
        return handshakeAnswer(identity.handshake);
      }
      // Only now, verified, does the delivery take a share of what every source needs: its transforms and its write.
      release = admission.toWork();
      const headers = redactors.get(sourceId)!(incoming.headers);
      const contentType = request.headers.get('content-type');
      const receiptOf = (event: Omit<Identity, 'items'>, bytes: Uint8Array, plan: Plan, handshake = false): ReceiptInput => ({
        id: receiptId(),
        source: sourceId,
        deliveryId: event.deliveryId,
        eventId: event.eventId,
        topic: event.topic,
        occurredAt: event.occurredAt,
        headers,
        contentType: bytes === body ? contentType : 'application/json',
        body: bytes,
        bodySha256: sha256Hex(bytes),
        tasks: plan.tasks,
        skipped: plan.skipped,
        ...(handshake ? { handshake } : {}),
      });
      const events: (Omit<Identity, 'items'> & { body?: Uint8Array })[] = identity.handshake ? [identity] : (identity.items ?? [identity]);
      const budgetMs = source.ackTimeoutMs ?? adapter.ackTimeoutMs;
      const deadline = answerDeadline(started, budgetMs);
      const seen =
        identity.handshake || !looksFirst.has(sourceId)
          ? []
          : await known.check(
              events.map(({ deliveryId, eventId }) => ({ source: sourceId, deliveryId, eventId })),
              Math.min(KNOWN_WAIT_MS, budgetMs / 4),
            );
      const receipts = identity.handshake
        ? [receiptOf(identity, body, { tasks: [], skipped: [] }, true)]
        : await Promise.all(
            events.map(async (event, i) => {
              const content = { identity: event, headers };
              if (seen[i]) return { ...receiptOf(event, event.body ?? body, nameTasks(sourceId, source, content, request.headers)), known: true };
              const plan = await planTasks(sourceId, source, content, request.headers, transforms, transformStartBy(deadline, budgetMs));
              return receiptOf(event, event.body ?? body, plan);
            }),
          );
      const writing = writer.record(receipts);
      // The slot is held until the write settles, not until the answer: a stalled database must not let
      // writes pile up behind 503s.
      const settled = release;
      release = () => {};
      writing.then(settled, settled);
      const recorded = await withinBudget(writing, deadline, logger, outage);
      for (const r of recorded) metrics.deliveries.inc({ source: sourceId, decision: r.decision });
      metrics.ackSeconds.observe({ source: sourceId, status: String(identity.handshake?.status ?? 200) }, (performance.now() - started) / 1000);
      const decided = recorded.length === 1 ? { receipt: recorded[0]!.receipt, decision: recorded[0]!.decision } : { receipts: recorded.map((r) => r.receipt), decisions: recorded.map((r) => r.decision) };
      logger.info({ source: sourceId, ...decided, deliveryId: identity.deliveryId, eventId: identity.eventId }, 'delivery recorded');
      if (identity.handshake) return handshakeAnswer(identity.handshake);
      if (identity.items) {
        return c.json({
          deliveryId: identity.deliveryId,
          decision: recorded.some((r) => r.decision === 'accepted') ? 'accepted' : (recorded[0]?.decision ?? 'accepted'),
          items: recorded.map((r, i) => ({ receipt: r.receipt, deliveryId: events[i]!.deliveryId, eventId: events[i]!.eventId, ...answer(r) })),
        });
      }
      const [one] = recorded;
      return c.json({ receipt: one!.receipt, deliveryId: identity.deliveryId, eventId: identity.eventId, ...answer(one!) });
    } catch (error) {
      if (error instanceof SignatureError) signatureFailures?.note(sourceId, error.check);
      if (error instanceof HttpError) {
        // A body left unread (too large, too slow, turned away before it was read) would otherwise keep arriving on
        // a kept-alive connection, read and discarded by the server for as long as its sender trickles it.
        if (error.status === 408 || error.status === 413 || !incoming.complete) outgoing.setHeader('connection', 'close');
        refused(c, sourceId, error.code, error instanceof SignatureError ? SIGNATURE_REASONS[error.check] : error.code);
        metrics.ackSeconds.observe({ source: sourceId, status: String(error.status) }, (performance.now() - started) / 1000);
        logger.info({ source: sourceId, status: error.status, reason: error.code }, 'delivery rejected');
      }
      throw error;
    } finally {
      release();
    }
  });
  // A handshake by GET (Meta's subscription check): answered as the sender expects, recorded as a handshake once.
  app.on('GET', ['/in/:source', '/in/:source/'], async (c) => {
    const sourceId = c.req.param('source');
    const source = config.sources[sourceId];
    const adapter = adapters.get(sourceId);
    if (!source || !adapter) return unknownSource(c, `no source named "${sourceId}" is configured`);
    if (!adapter.answerGet) throw new HttpError(405, 'method_not_allowed', `deliveries are POSTed to /in/${sourceId}; ${adapter.name} makes no GET handshake`);
    let answered: ReturnType<NonNullable<Adapter['answerGet']>>;
    try {
      answered = adapter.answerGet(new URL(c.req.url).searchParams);
    } catch (error) {
      // A wrong verify token is counted as a POST's wrong signature is: a rotated token shows the same way.
      if (error instanceof HttpError) {
        refused(c, sourceId, error.code);
        if (error.status === 403) signatureFailures?.note(sourceId, 'signature');
      }
      throw error;
    }
    const { identity, answer: handshake } = answered;
    const { incoming } = c.env as HttpBindings;
    const empty = new Uint8Array(0);
    const receipt: ReceiptInput = {
      id: receiptId(),
      source: sourceId,
      ...identity,
      occurredAt: null,
      headers: redactors.get(sourceId)!(incoming.headers),
      contentType: null,
      body: empty,
      bodySha256: sha256Hex(empty),
      tasks: [],
      skipped: [],
      handshake: true,
    };
    const [recorded] = await withinBudget(writer.record([receipt]), answerDeadline(performance.now(), source.ackTimeoutMs ?? adapter.ackTimeoutMs), logger, outage);
    metrics.deliveries.inc({ source: sourceId, decision: recorded!.decision });
    return handshakeAnswer(handshake);
  });
  // `/in`, `/in/` and deeper paths name no source either: a sender pointed there is as lost as one at `/in/old`.
  app.post('/in', (c) => unknownSource(c, NO_SOURCE_NAMED));
  app.post('/in/*', (c) => unknownSource(c, NO_SOURCE_NAMED));
  return app;
}

/** The source label of a request to a source that is not configured: never the raw path, which anyone chooses. */
const UNKNOWN = '(unknown)';
const NO_SOURCE_NAMED = 'deliveries are posted to /in/{source}, with the name of a configured source';

/**
 * The path and query the sender called, which senders that sign their URL signed: as the request line named it,
 * for a URL parser re-encodes some characters (`'` as `%27`) that the sender signed as they were. A request line
 * that is not a path (an absolute URL) is taken as parsed.
 */
function targetOf(requestLine: string | undefined, url: string): string {
  if (requestLine?.startsWith('/')) return requestLine;
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

/** A failed signature check as people read it: which part of the request did not verify. */
const SIGNATURE_REASONS: Record<SignatureCheck, string> = { signature: 'invalid_signature', timestamp: 'stale_timestamp', missing_header: 'missing_header' };

/** What a refused request leaves: where it came from and the names of its headers, never a value. */
function refusedRequest(c: Context): RefusedRequest {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  // Node's own header object where there is one: walking the web Headers builds a copy of them all first.
  return { remoteAddress: incoming?.socket.remoteAddress ?? null, headerNames: incoming ? Object.keys(incoming.headers) : [...c.req.raw.headers.keys()] };
}

function handshakeAnswer(handshake: HandshakeAnswer): Response {
  return new Response(handshake.body, { status: handshake.status, headers: { 'content-type': handshake.contentType } });
}

/** Each delivery's receipts, written as one batch: the function answers each in order, split back per delivery. */
function answer(recorded: Recorded) {
  if (recorded.decision === 'handshake') return { decision: recorded.decision, tasks: [] };
  if (recorded.decision === 'accepted') {
    return {
      decision: recorded.decision,
      tasks: recorded.created.map(({ id, action }) => ({ id, action })),
      ...(recorded.existing.length > 0 ? { existingTasks: recorded.existing } : {}),
    };
  }
  const { firstSeen } = recorded;
  return {
    decision: recorded.decision,
    tasks: recorded.existing,
    firstSeen: {
      receipt: firstSeen.id,
      deliveryId: firstSeen.deliveryId,
      eventId: firstSeen.eventId,
      at: firstSeen.receivedAt.toISOString(),
      decision: firstSeen.decision,
    },
  };
}
