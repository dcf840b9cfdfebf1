/**
 * A string's length in characters (Unicode code points), as the gateway's JSON Schema checks
 * count `maxLength`: "1-255 characters" holds 255 emoji, not the 127 that UTF-16 units allow,
 * and a service's own check of a limit agrees with the gateway's.
 */
export function characters(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}
