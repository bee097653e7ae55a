/** How the report writes figures, one way everywhere: counts with separators, latencies to three digits. */
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));
export const mib = (bytes: number | null) => (bytes === null ? 'n/a' : `${(bytes / 2 ** 20).toFixed(0)} MiB`);
export const pct = (share: number | null | undefined) => (share === null || share === undefined ? 'n/a' : `${(share * 100).toFixed(0)} %`);
export const times = (n: number | null) => (n === null ? 'n/a' : `${n.toFixed(2)}×`);
