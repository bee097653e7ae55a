export const STAMP: string;
export function sourcesHash(root: string): string;
export function buildIsCurrent(root: string): boolean;
