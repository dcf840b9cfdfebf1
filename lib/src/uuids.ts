/**
 * A UUID in one spelling: lower case, without a `urn:uuid:` prefix. The gateway takes UUIDs as
 * JSON Schema's `uuid` format does (either case, the prefix allowed), and client runtimes differ
 * (Swift's uuidString is upper case): an id is an idempotency key, so its spellings must meet.
 * Anything that is not a UUID is left as it is.
 */
const UUID = /^(?:urn:uuid:)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

export function canonicalUuid(id: string): string {
  const m = UUID.exec(id);
  return m ? m[1]!.toLowerCase() : id;
}
