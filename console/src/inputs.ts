// What a form's text fields send: what was typed is what the API judges (and refuses beside its field).

/** A number typed, or the text as is (for the API to refuse beside its field); empty is null. */
export const numberOrText = (text: string): number | string | null => {
  const t = text.trim();
  if (t === "") return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
};

/** A local date-time input's value (minutes, the viewer's zone) as an RFC 3339 instant, or undefined when empty or not a time. */
export const localToIso = (v: string | null | undefined): string | undefined => {
  if (!v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
};
