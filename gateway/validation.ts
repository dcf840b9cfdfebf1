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

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) =>
  (httpPart === "body" ? bodyAjv : textAjv).compile(schema as object) as any;
