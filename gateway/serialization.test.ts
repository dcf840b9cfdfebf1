import fastJsonStringify from "fast-json-stringify";
import Fastify from "fastify";
import { test as t } from "uvu";
import * as assert from "uvu/assert";
import { apiRoutes } from "./routes/index.ts";
import { forSerializer } from "./serialization.ts";

/** A valid value of each string format the answers declare (a nullable object is told apart by validating it). */
const FORMATS: Record<string, string> = {
  "date-time": "2026-12-05T01:02:03.456Z",
  date: "2026-12-05",
  uuid: "0b9f4e0c-5d7a-4c1e-9a3b-2f6d8e1c7a55",
  uri: "https://example.com/hook",
  email: "ops@example.com",
};

/**
 * A value of `schema`. `isNull` decides, at each place the schema allows null, whether the value
 * is null there (called in walk order, so a caller can make it every other one). Every declared
 * property is present, arrays hold two items.
 */
function sample(schema: any, isNull: () => boolean, depth = 0): unknown {
  if (depth > 12) return null;
  if (Array.isArray(schema.anyOf)) {
    const others = schema.anyOf.filter((b: any) => b.type !== "null");
    if (others.length < schema.anyOf.length && isNull()) return null;
    return sample(others[0], isNull, depth + 1);
  }
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case "null":
      return null;
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [k, s] of Object.entries<any>(schema.properties ?? {})) out[k] = sample(s, isNull, depth + 1);
      for (const s of Object.values<any>(schema.patternProperties ?? {})) out.keyed = sample(s, isNull, depth + 1);
      if (schema.additionalProperties && typeof schema.additionalProperties === "object") out.extra = sample(schema.additionalProperties, isNull, depth + 1);
      return out;
    }
    case "array":
      return [sample(schema.items ?? {}, isNull, depth + 1), sample(schema.items ?? {}, isNull, depth + 1)];
    case "string":
      return FORMATS[schema.format] ?? "text \"quoted\" é";
    case "integer":
      return 42;
    case "number":
      return 1.25;
    case "boolean":
      return true;
    default:
      return { free: ["form", 1, null] };
  }
}

/** Every route's response schemas as the routes declare them (what the serializer compiler is given), by route and status. */
async function answerSchemas(): Promise<Map<string, unknown>> {
  const schemas = new Map<string, unknown>();
  const app = Fastify();
  app.addHook("onRoute", (route) => {
    for (const [status, schema] of Object.entries(route.schema?.response ?? {})) schemas.set(`${route.method} ${route.url} ${status}`, schema);
  });
  for (const routes of apiRoutes) await app.register(routes);
  await app.close();
  return schemas;
}

t("every route's answer schemas serialize to the same JSON in the serializer's form (gateway/serialization.ts)", async () => {
  const schemas = await answerSchemas();
  assert.ok(schemas.size > 50, `answers checked: ${schemas.size}`);
  for (const [name, schema] of schemas) {
    const declared = fastJsonStringify(schema as never);
    const fast = fastJsonStringify(forSerializer(schema) as never);
    // Nulls everywhere allowed, nowhere, and every other one starting either way.
    const modes: [string, () => boolean][] = [["nulls", () => true], ["values", () => false], ["every other null", alternate(true)], ["every other null, from the second", alternate(false)]];
    for (const [mode, isNull] of modes) {
      const value = sample(schema, isNull);
      assert.is(fast(value), declared(value), `${name} (${mode})`);
    }
  }
});

function alternate(first: boolean): () => boolean {
  let next = first;
  return () => {
    const out = next;
    next = !next;
    return out;
  };
}

t("the serializer's form writes nullable fields by type and literal unions as enums", () => {
  const declared = {
    type: "object",
    properties: {
      name: { anyOf: [{ type: "string", description: "d" }, { type: "null" }] },
      credits: { anyOf: [{ type: "object", properties: { low_at: { anyOf: [{ type: "number" }, { type: "null" }] } } }, { type: "null" }] },
      kind: { anyOf: [{ type: "string", const: "paid" }, { type: "string", const: "promotional" }] },
      list: { type: "array", items: { anyOf: [{ type: "integer" }, { type: "null" }] } },
      either: { anyOf: [{ type: "string" }, { type: "number" }] },
    },
  };
  const before = JSON.stringify(declared);
  assert.equal(forSerializer(declared), {
    type: "object",
    properties: {
      name: { type: ["string", "null"], description: "d" },
      credits: { type: ["object", "null"], properties: { low_at: { type: ["number", "null"] } } },
      kind: { type: "string", enum: ["paid", "promotional"] },
      list: { type: "array", items: { type: ["integer", "null"] } },
      either: { anyOf: [{ type: "string" }, { type: "number" }] },
    },
  });
  assert.is(JSON.stringify(declared), before, "the route's own schema is left as it was");
});

t.run();
