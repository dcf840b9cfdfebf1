import { Type, type TSchema } from "typebox";

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const DateTime = Type.String({ format: "date-time", description: "ISO 8601 datetime (UTC)" });

/** A body object: unknown fields are refused with 422 so that a typo never passes silently. */
export const Body = <P extends Record<string, TSchema>>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

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
  409: "Already exists",
  413: "Request too large",
  422: "Body validation failed; `issues` lists every problem",
  500: "Backend failure",
  503: "A backend service is unavailable",
};

/** Response schemas for the error statuses a route can answer (for the OpenAPI document). */
export function errors(...codes: number[]): Record<number, TSchema> {
  return Object.fromEntries(
    [...codes, 500].map((c) => [c, Type.Object(ErrorBody.properties, { description: ERROR_DESCRIPTIONS[c] })]),
  );
}

export const iso = (d: Date | undefined): string | null => (d ? d.toISOString() : null);
