/** The p-th percentile (nearest rank) of ascending `sorted`; 0 when empty. */
export const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
