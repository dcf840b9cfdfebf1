/**
 * When a cached entry is read again in the background while it still answers: in the second
 * half of its time. Under steady traffic nobody waits for the read, and nothing answered is
 * older than the cache's TTL. Shared by the caches that refresh ahead (the gateway's verified
 * keys, the plans service's plans) so that they follow one rule.
 */
export function dueForRefresh(cache: { ttl: number; getRemainingTTL(key: string): number }, key: string): boolean {
  return cache.getRemainingTTL(key) < cache.ttl / 2;
}
