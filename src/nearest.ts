/**
 * The known words closest to one that is not known, for a "did you mean" — none when nothing is close enough to
 * be the word meant. Distance is optimal string alignment (Levenshtein with a swap of two neighbours counting as
 * one edit: "transfrom" is one from "transform"), case ignored; a word may be off by a third of its length,
 * and by one at least, so "ur" still finds "url" while "foo" finds nothing.
 */
export function nearest(word: string, known: readonly string[]): string[] {
  const limit = Math.max(1, Math.floor(word.length / 3));
  const close = known.map((candidate) => ({ candidate, d: editDistance(word.toLowerCase(), candidate.toLowerCase()) })).filter(({ d }) => d <= limit);
  const best = Math.min(...close.map(({ d }) => d));
  return close.filter(({ d }) => d === best).map(({ candidate }) => candidate);
}

/** `did you mean "transform"?` for the nearest known words, or null when none is close. */
export function didYouMean(word: string, known: readonly string[]): string | null {
  const near = nearest(word, known);
  return near.length > 0 ? `did you mean ${near.map((w) => JSON.stringify(w)).join(' or ')}?` : null;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of adjacent characters. */
export function editDistance(a: string, b: string): number {
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      current.push(d);
    }
    [before, previous] = [previous, current];
  }
  return previous[b.length]!;
}
