import fastJsonStringify from "fast-json-stringify";
import type { FastifySerializerCompiler } from "fastify";

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** Keywords whose value is a schema, and those whose value maps names to schemas. */
const SUBSCHEMA = ["items", "additionalProperties", "not"] as const;
const SCHEMA_MAPS = ["properties", "patternProperties"] as const;

/**
 * A response schema in the form the serializer writes fastest, for the same JSON.
 *
 * fast-json-stringify writes an `anyOf` by validating the value against each alternative with
 * Ajv. Every nullable field (`Nullable`: anyOf [X, null]) cost an Ajv call on every answer, six
 * of them for each dimension of a session's `limits`, and a route's first answer waited some
 * 50 ms while Ajv compiled them. Written as a `type` list (["string", "null"]), the serializer
 * picks the alternative by the value's JavaScript type instead; a union of string literals
 * becomes a string `enum`, which it writes as a string. Anything else stays as it is. Only the
 * serializer sees this form: request validation and the OpenAPI document keep the schemas as
 * the routes declare them. The JSON is the same for every value that fits the schema
 * (gateway/serialization.test.ts checks every route's); a value that fits none of an `anyOf`'s
 * alternatives made the serializer throw (a 500) and is now written as the fields around it
 * are, unchecked: serializing answers is not where they are validated.
 */
export function forSerializer(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forSerializer);
  if (!isSchema(schema)) return schema;
  const out: Schema = { ...schema };
  for (const k of SUBSCHEMA) if (k in out) out[k] = forSerializer(out[k]);
  for (const k of SCHEMA_MAPS) {
    const map = out[k];
    if (isSchema(map)) out[k] = Object.fromEntries(Object.entries(map).map(([name, s]) => [name, forSerializer(s)]));
  }
  if (!Array.isArray(out.anyOf)) return out;
  const branches = out.anyOf.map(forSerializer) as Schema[];
  const { anyOf: _, ...rest } = out;
  const literals = branches.length > 0 && branches.every((b) => b.type === "string" && typeof b.const === "string");
  if (literals) return { ...rest, type: "string", enum: branches.map((b) => b.const) };
  const nonNull = branches.filter((b) => b.type !== "null");
  if (branches.length === 2 && nonNull.length === 1 && typeof nonNull[0]!.type === "string" && !("anyOf" in nonNull[0]!)) {
    return { ...rest, ...nonNull[0], type: [nonNull[0]!.type, "null"] };
  }
  return { ...out, anyOf: branches };
}

/** The gateway's serializer compiler: fast-json-stringify over `forSerializer(schema)`. */
export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => fastJsonStringify(forSerializer(schema) as never);
