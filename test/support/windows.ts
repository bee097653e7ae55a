/**
 * The most arrivals in any window of `windowMs`, sliding over the arrival times (each window starts at an
 * arrival): fixed one-second buckets would let a burst that straddles two of them pass unseen.
 */
export function busiestWindow(arrivals: readonly number[], windowMs = 1000): number {
  const times = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  let end = 0;
  for (let start = 0; start < times.length; start++) {
    while (end < times.length && times[end]! < times[start]! + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
}
