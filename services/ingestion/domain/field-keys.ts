/**
 * Model names become field names of counter documents ("cost_by_model.<model>"). MongoDB
 * reads "." as a path separator and refuses a leading "$", so those (and "%", the escape
 * itself) are percent-encoded; decoding restores the name exactly.
 */
export function encodeKey(name: string): string {
  return name.replace(/[%.$]/g, (c) => (c === "%" ? "%25" : c === "." ? "%2E" : "%24"));
}

export function decodeKey(key: string): string {
  return key.replace(/%(25|2E|24)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

export function decodeKeys<V>(obj: Record<string, V> | undefined): Record<string, V> {
  const out: Record<string, V> = {};
  for (const [k, v] of Object.entries(obj ?? {})) out[decodeKey(k)] = v;
  return out;
}
