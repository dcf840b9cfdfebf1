import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";

/**
 * Bodies are validated strictly: no type coercion, no defaults injected (services own the
 * defaults), every issue reported. Query strings and path parameters arrive as text, so there
 * types are coerced and documented defaults applied.
 */
function makeAjv(forText: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    useDefaults: forText,
    coerceTypes: forText ? "array" : false,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

/** How deep a JSON value nests: a scalar is 0, `{}` and `[]` are 1. */
export function jsonDepth(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  let deepest = 0;
  for (const v of Object.values(value)) deepest = Math.max(deepest, jsonDepth(v));
  return deepest + 1;
}

const bodyAjv = makeAjv(false);
// Free-form objects (event metadata) travel as protobuf Structs, whose decoders refuse deep
// nesting; a body that nests deeper than `maxDepth` gets a 422 naming the field instead.
bodyAjv.addKeyword({
  keyword: "maxDepth",
  type: "object",
  schemaType: "number",
  error: { message: (cxt) => `must not nest deeper than ${cxt.schema} levels` },
  validate: (max: number, data: unknown) => jsonDepth(data) <= max,
});
const textAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) =>
  (httpPart === "body" ? bodyAjv : textAjv).compile(schema as object) as any;
