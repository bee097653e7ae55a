/**
 * An action's `order`: the entity its tasks are about (`key`) and where each event stands among that entity's
 * events (`by`), both rendered at ingest from the verified delivery with the task key's placeholders, and frozen
 * with the task. The database holds each key's tasks in that order (migration 0025).
 */
import { InputError } from '../errors.ts';
import { jsonPointer } from '../json-pointer.ts';
import { renderTaskKey, type DeliveryNames } from './task-key.ts';

export type OrderMode = 'sequence' | 'latest';

export interface OrderTemplates {
  key: string;
  by?: string | undefined;
  mode: OrderMode;
}

/**
 * A task's place in its key's order. A position is a number (a time is its epoch milliseconds) or text; the
 * database puts numbers first, each kind in its own order, then ties by arrival. Without `by`, arrival alone.
 */
export interface OrderPlace {
  key: string;
  mode: OrderMode;
  number: number | null;
  text: string | null;
  /** The position as the delivery gave it, for people to read (a time as written, not its milliseconds). */
  shown: string | null;
}

/** A body field alone, as `{body:/updated_at}`: its JSON number is compared as a number. */
const ONE_BODY_FIELD = /^\{body:([^}]*)\}$/;

/**
 * An ISO-8601 date or date-time, as senders write their `updated_at`: with a zone or without (taken as UTC, so the
 * same text means the same instant on every instance).
 */
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/** Epoch milliseconds of an ISO-8601 time, or null when the text is not one. */
export function isoTimeMs(text: string): number | null {
  const match = ISO_TIME.exec(text.trim());
  if (match === null) return null;
  const [, date, time, zone] = match;
  const ms = Date.parse(time === undefined ? `${date}T00:00:00Z` : `${date}T${time.replace(',', '.')}${zone ?? 'Z'}`);
  return Number.isNaN(ms) ? null : ms;
}

/** The task's place in its key's order, or why the delivery cannot give one (a field it lacks). */
export function placeInOrder(order: OrderTemplates, identity: DeliveryNames, headers: Headers): OrderPlace | { error: string } {
  try {
    const key = renderTaskKey(order.key, identity, headers, 'order.key');
    if (order.by === undefined) return { key, mode: order.mode, number: null, text: null, shown: null };
    const field = ONE_BODY_FIELD.exec(order.by);
    const value = field === null ? undefined : jsonPointer(identity.json, field[1]!);
    if (typeof value === 'number' && Number.isFinite(value)) return { key, mode: order.mode, number: value, text: null, shown: String(value) };
    const text = renderTaskKey(order.by, identity, headers, 'order.by');
    const ms = isoTimeMs(text);
    return { key, mode: order.mode, number: ms, text: ms === null ? text : null, shown: text };
  } catch (error) {
    if (error instanceof InputError) return { error: error.message };
    throw error;
  }
}

/** Whether a task failed because its order's key or position could not be read of its delivery. */
export const isOrderError = (error: string): boolean => /^order\.(key|by)\b/.test(error);

/** The words a task failed for its order is recorded with. */
export const ORDER_FAILED = {
  lastError: (error: string) => `nothing was sent: ${error}`,
  decision: "failed: the order's key or position could not be read of this delivery, and nothing was sent; fix the action's order, then retry",
};
