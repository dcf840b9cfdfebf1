import { Type, type TObjectOptions, type TSchema } from "typebox";
import { ignoredFields } from "@meter/lib/metrics";

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const DateTime = Type.String({
  format: "date-time",
  description: "ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC",
});

/**
 * Date-times the API accepts: RFC 3339 with the zone optional (a missing zone means UTC, as a
 * client writing `new Date().toISOString().slice(0, 19)` or a database export means it),
 * `T`, `t` or a space between date and time, `+hh:mm`, `+hhmm` or `+hh` offsets.
 */
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

/** Whether `s` is such a date-time, with every field in range (no 30 February, no 24:00). */
export function isDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const [y, mo, d] = m[1]!.split("-").map(Number) as [number, number, number];
  const [h, mi] = m[2]!.split(":").map(Number) as [number, number];
  const zone = m[5]?.length && m[5].length > 1 ? m[5].replace(":", "") : "";
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return (
    mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth && h <= 23 && mi <= 59 && Number(m[3]) <= 60 &&
    (zone === "" || (Number(zone.slice(1, 3)) <= 23 && Number(zone.slice(3) || 0) <= 59))
  );
}

/**
 * Reads a date-time that matched DATE_TIME. JavaScript's Date reads a zone-less date-time as
 * local time and refuses several RFC 3339 spellings, so it is first rewritten to the one form
 * it reads exactly. A leap second (:60) reads as the second before it.
 */
export function parseDateTime(s: string): Date {
  const m = DATE_TIME.exec(s);
  if (!m) return new Date(Number.NaN);
  const [, date, hm, sec, frac = "", zone = "Z"] = m;
  const offset = zone.toUpperCase() === "Z" ? "Z" : `${zone.slice(0, 3)}:${zone.slice(3).replace(":", "") || "00"}`;
  return new Date(`${date}T${hm}:${sec === "60" ? "59" : sec}${frac}${offset}`);
}

/**
 * Text without an unpaired UTF-16 surrogate (U+D800-U+DFFF alone; JSON's "\ud800" escapes one).
 * Ids travel and are stored as UTF-8, where every unpaired surrogate becomes U+FFFD, so that
 * distinct ids would name one user. (JSON Schema patterns are Unicode: a pair is one character.)
 */
export const WELL_FORMED_PATTERN = "^[^\\uD800-\\uDFFF]*$";

/**
 * An external user id (or a team's): also neither "." nor "..", which URLs cannot carry as a
 * path segment (clients and proxies resolve them as dot segments), so such a user could never
 * be addressed under /users/{user_id}.
 */
export const EXTERNAL_ID_PATTERN = "^(?!\\.\\.?$)[^\\uD800-\\uDFFF]*$";

/** What a refused pattern above means, for the 422/400 issue. */
export const PATTERN_MESSAGES: Record<string, string> = {
  [WELL_FORMED_PATTERN]: "must not contain unpaired surrogates (U+D800-U+DFFF)",
  [EXTERNAL_ID_PATTERN]: 'must not contain unpaired surrogates (U+D800-U+DFFF) nor be "." or ".."',
};

/** The product's id of a user, wherever one is taken (path, body, events); 1-255 characters. */
export const ExternalUserId = (description = "external_user_id", maxLength: number | null = 255) =>
  Type.String({ minLength: 1, ...(maxLength ? { maxLength } : {}), pattern: EXTERNAL_ID_PATTERN, description: `${description}; not "." or ".."` });

/**
 * `{user_id}` of the routes under `/users/{user_id}/`: the product's external user id. No length
 * bound in a path: a longer id names no user (404), as any unknown one (400 is for bodies and queries).
 */
export const UserParams = Type.Object({ user_id: ExternalUserId("external_user_id (1-255 characters), URL-encoded", null) });

/** `{team_id}` of the routes under `/teams/{team_id}/`: the product's external team id (same rules as a user's). */
export const TeamParams = Type.Object({ team_id: ExternalUserId("external_team_id (1-255 characters), URL-encoded", null) });

/** A body object: unknown fields are refused with 422 so that a typo never passes silently. */

/** A budget lease id (the holder id of `POST /users/{user_id}/leases`). */
export const LeaseId = Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$", description: "1-64 letters, digits, _ or -" });

export const Body = <P extends Record<string, TSchema>>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

/**
 * An event as client libraries send it: fields of the schema keep their validation, fields it
 * does not know are ignored (and counted by `countIgnoredFields`), so that a client sending
 * one field more never loses a batch of spend. Configuration bodies use `Body`.
 */
export const EventBody = <P extends Record<string, TSchema>>(properties: P, description: string) =>
  Type.Object(properties, { additionalProperties: true, description: `${description}; fields not listed here are ignored` });

/** Counts the top-level fields of `items` that `schema` does not list, for the route's metric. */
export function countIgnoredFields(route: string, schema: { properties: Record<string, unknown> }, items: readonly object[]): number {
  let ignored = 0;
  for (const item of items) for (const field in item) if (!Object.hasOwn(schema.properties, field)) ignored++;
  if (ignored > 0) ignoredFields.inc({ route }, ignored);
  return ignored;
}

export const ErrorBody = Type.Object(
  {
    detail: Type.String(),
    issues: Type.Optional(
      Type.Array(Type.Object({ location: Type.String(), path: Type.String(), message: Type.String() })),
    ),
  },
  { description: "Error" },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request (query, path or a rule of the request)",
  401: "Missing or invalid API key",
  403: "The key does not grant access",
  404: "Not found (resources of other products read as not found)",
  409: "Conflicts with the current state (already exists, a limit reached, the last admin key)",
  413: "Request too large",
  422: "Body validation failed; `issues` lists every problem",
  429: "Too many requests; retry after `Retry-After` seconds",
  500: "Backend failure",
  503: "A backend service is unavailable",
};

/** Response schemas for the error statuses a route can answer (for the OpenAPI document). */
export function errors(...codes: number[]): Record<number, TSchema> {
  return Object.fromEntries(
    [...codes, 500].map((c) => [c, Type.Object(ErrorBody.properties, { description: ERROR_DESCRIPTIONS[c] })]),
  );
}

/**
 * Options of a documented route anyone may call without a key: the auth hook lets it pass
 * (`config.public`) and the OpenAPI document asks no security of it. The two go together.
 */
export const publicRoute = <S extends object>(schema: S) => ({ config: { public: true }, schema: { ...schema, security: [] } });

export const iso = (d: Date | undefined): string | null => (d ? d.toISOString() : null);

/**
 * Options of a read of a user's or a team's usage state as the client library makes it: an ingest
 * key may call it; 404 for an unknown user or team.
 */
export const clientRead = <P extends TSchema, B extends TSchema, M extends { description?: string; querystring?: TSchema } = {}>(
  params: P,
  body: B,
  operationId: string,
  summary: string,
  more: M = {} as M,
) => ({
  config: { ingest: true },
  schema: { operationId, summary, ...more, tags: ["usage"], params, response: { 200: body, ...errors(400, 401, 404) } },
});

/**
 * An object keyed by any string (model, tool and metadata key names). TypeBox's Record of
 * String matches keys by "^.*$", and "." misses a line break in Ajv and fast-json-stringify
 * alike: a key holding one ("gpt-4o\r" from a CRLF file) skipped validation and was left out of
 * every answer. Constraints on the key itself go in `propertyNames`.
 */
export const KeyedBy = <T extends TSchema>(value: T, options?: TObjectOptions) => Type.Record(Type.String({ pattern: "^[\\s\\S]*$" }), value, options);
