/**
 * When a cached entry is read again in the background while it still answers: in the last
 * `share` of its time (the second half unless told). Under steady traffic nobody waits for the
 * read, and nothing answered is older than the cache's TTL. Shared by the caches that refresh
 * ahead (the gateway's verified keys, the plans service's plans, users and teams) so that they
 * follow one rule.
 */
export function dueForRefresh(cache: { ttl: number; getRemainingTTL(key: string): number }, key: string, share = 1 / 2): boolean {
  return cache.getRemainingTTL(key) < cache.ttl * share;
}
