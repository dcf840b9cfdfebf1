/**
 * A string's length in characters (Unicode code points), as the gateway's JSON Schema checks
 * count `maxLength`: "1-255 characters" holds 255 emoji, not the 127 that UTF-16 units allow,
 * and a service's own check of a limit agrees with the gateway's.
 */
export function characters(s: string): number {
  // A string iterates by code points (an unpaired surrogate is one).
  let n = 0;
  for (const _ of s) n++;
  return n;
}
