/** The names of the repairs missing from the postgres.js that `from` (a file URL) resolves; none by default. */
export function missingRepairs(from?: string): string[];
/** Applies every missing repair; throws, naming the repair, when the driver's code has moved on. */
export function applyRepairs(from?: string): void;
/** Each repair: its name, and the edits (text before, text after) it makes to the driver's connection.js. */
export const repairs: { name: string; edits: [string, string][] }[];
