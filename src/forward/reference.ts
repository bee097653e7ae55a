import { jsonPointer } from '../json-pointer.ts';

/** A 2xx answer as the forwarder keeps it. */
export interface Answer {
  status: number;
  statusText: string;
  headers: Readonly<Record<string, string>>;
  body: Buffer;
}

/**
 * What names the confirmed effect: the configured JSON pointer into the answer, else its `Location`, else
 * the status line — a reference is never empty, so "succeeded" always says what confirmed it.
 */
export function referenceOf(answer: Answer, pointer: string | undefined): string {
  if (pointer !== undefined) {
    const found = jsonPointer(parseJson(answer.body), pointer);
    if (typeof found === 'string' || typeof found === 'number') return String(found);
  }
  return answer.headers.location ?? `${answer.status} ${answer.statusText}`.trim();
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
