/** A seeded pseudo-random generator in [0, 1), so that a failure of a randomised test can be replayed. */
export function rng(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}
