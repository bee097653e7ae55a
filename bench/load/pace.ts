/**
 * When each request of a paced load falls due: the k-th at `start + k / rate`, whichever client takes it, so
 * the clients together keep the rate however their answers interleave. Null once the next would fall due at
 * or after `end`.
 */
export function pacer(start: number, ratePerSecond: number, end: number): () => number | null {
  let next = 0;
  return () => {
    const due = start + (next * 1000) / ratePerSecond;
    if (due >= end) return null;
    next++;
    return due;
  };
}
