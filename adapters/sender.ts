/**
 * A sender is one module: its adapter checks the sender's signature over the raw bytes and names what arrived,
 * and its `sample` signs a delivery as the sender would, for `oncehook send-sample`: the check and the signing side
 * by side. The registry (index.ts) finds a sender by the name a source gives; the config check takes from it what a
 * source of that sender needs, and its own options' schema.
 */
import type { z } from 'zod';
import type { Adapter } from './types.ts';

/** What a sender's adapter and samples are made from: the source's secrets, and the settings a sender reads. */
export interface SenderSource<Options = undefined> {
  secrets: readonly string[];
  /** Where the sender calls this source: those that sign the URL they call (Twilio, Square, HubSpot) are checked against it. */
  publicUrl?: string | undefined;
  /** What a sender's GET handshake must present (Meta's hub.verify_token). */
  verifyToken?: string | undefined;
  /** The sender's own options, as its `options` schema read them from the source. */
  options?: Options | undefined;
}

/** The options a sender has of its own: the source's field that holds them, their schema, and its description. */
export interface SenderOptions<Options, Field extends string = string> {
  readonly field: Field;
  readonly schema: z.ZodType<Options>;
  readonly description: string;
}

/** What `send-sample` asks a sender's sample to be, with the values it chose where the person did not. */
export interface SampleRequest<Options = undefined> {
  source: SenderSource<Options>;
  /** The options given: `--event-id`, `--delivery-id`, `--topic`, and the path the sample is posted to (`/in/{source}`). */
  asked: { eventId?: string | undefined; deliveryId?: string | undefined; topic?: string | undefined; path?: string | undefined };
  /** The event ID asked for, else random digits; the delivery ID asked for, else a random UUID. */
  eventId: string;
  deliveryId: string;
  /** The source's first secret, the one a sample is signed with. */
  secret: string;
  /** Unix seconds. */
  now: number;
}

export interface Sample {
  headers: Record<string, string>;
  body: string;
}

/** A sample that cannot be built as asked: said to the person, exit 2. */
export class SampleError extends Error {}

/** A sender as the registry holds it: `name` is what a source's `adapter` gives. */
export interface Sender<Options = undefined, Name extends string = string, Field extends string = string> {
  readonly name: Name;
  /** The source's settings this sender cannot verify without, each with what the config check says when it is missing. */
  readonly needs?: Readonly<Record<string, string>>;
  readonly options?: SenderOptions<Options, Field>;
  /** Secrets that are keys to decode rather than shared text: how one is decoded, and what is said of one that does not. */
  readonly secretKey?: { readonly decode: (secret: string) => unknown; readonly problem: string };
  /** Its deliveries carry no ID of their own: their event's ID names them, and a retry repeats it. */
  readonly namedByEvent?: true;
  /** Why a sample of this source cannot carry a delivery ID of its own (`--delivery-id`), or null where it can. */
  refusesDeliveryId?(source: SenderSource<Options>): string | null;
  adapter(source: SenderSource<Options>): Adapter;
  /** A delivery signed as the sender signs one; a SampleError where the module cannot make one. */
  sample(request: SampleRequest<Options>): Sample;
}

/** An adapter as its sender's module makes it: `sender` gives it its name. */
export type SenderAdapter = Omit<Adapter, 'name'>;

/** A sender as its module declares it. */
export function sender<const Name extends string, Options = undefined, const Field extends string = never>(
  definition: Omit<Sender<Options, Name, Field>, 'adapter'> & { adapter(source: SenderSource<Options>): SenderAdapter },
): Sender<Options, Name, Field> {
  return { ...definition, adapter: (source) => ({ name: definition.name, ...definition.adapter(source) }) };
}

/** A setting the config check requires of the sender's sources, or the error of a caller that skipped that check. */
export function required<T>(value: T | undefined, setting: string, why: string): T {
  if (value === undefined) throw new Error(`the source's "${setting}" is missing: ${why}`);
  return value;
}
