import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";
import { jsonDepth } from "@meter/rules";
import { isDateTime } from "./schemas/common.ts";

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
  // Lenient where harmless: a date-time without a zone is accepted (and read as UTC).
  ajv.addFormat("date-time", { type: "string", validate: isDateTime });
  return ajv;
}


const bodyAjv = makeAjv(false);
// Free-form objects (event metadata) travel as protobuf Structs, whose decoders refuse deep
// nesting; a body that nests deeper than `x-maxDepth` gets a 422 naming the field instead.
bodyAjv.addKeyword({
  keyword: "x-maxDepth",
  type: "object",
  schemaType: "number",
  error: { message: (cxt) => `must not nest deeper than ${cxt.schema} levels` },
  validate: (max: number, data: unknown) => jsonDepth(data, max) <= max,
});
const textAjv = makeAjv(true);

/**
 * A query parameter the route does not declare is refused (400), as an unknown body field is:
 * a misspelt `?limt=5` must not pass silently, and the OpenAPI document's parameters are then
 * the whole of what a route reads. Documented routes without parameters get an empty
 * querystring schema (`closedQueries`), so that they refuse any.
 */
export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  if (httpPart === "body") return bodyAjv.compile(schema as object) as any;
  const closed = httpPart === "querystring" ? { additionalProperties: false, ...(schema as object) } : schema;
  return textAjv.compile(closed as object) as any;
};

/** Gives every documented route (one with an operationId) a querystring schema, empty when it reads none. */
export function closedQueries(route: { schema?: { operationId?: string; querystring?: unknown } }): void {
  if (route.schema?.operationId && !route.schema.querystring) route.schema.querystring = { type: "object", properties: {} };
}
