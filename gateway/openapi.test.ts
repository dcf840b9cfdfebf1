import { createConfig, lintFromString } from "@redocly/openapi-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import fastJsonStringify from "fast-json-stringify";
import { startTestStack, type TestStack } from "../test/support/stack.ts";
import { forSerializer } from "./serialization.ts";

// The served document feeds generated clients (the console's types among them): it must pass
// Redocly's recommended rules, errors and warnings alike, and name every operation.
const t = suite<{ stack: TestStack; doc: any }>("OpenAPI document");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.doc = (await ctx.stack.api.get("/openapi.json")).body;
});
t.after(async ({ stack }) => stack.close());

t("is clean under Redocly's recommended rules", async ({ doc }) => {
  const problems = await lintFromString({
    source: JSON.stringify(doc),
    absoluteRef: "openapi.json",
    config: await createConfig({ extends: ["recommended"] }),
  });
  const found = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
  assert.equal(found, []);
});

t("every operation has a unique camelCase operationId", ({ doc }) => {
  const ids: string[] = [];
  for (const [route, ops] of Object.entries<Record<string, { operationId?: string }>>(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.ok(op.operationId, `${method.toUpperCase()} ${route} has an operationId`);
      assert.match(op.operationId!, /^[a-z][A-Za-z]+$/, `${op.operationId} is camelCase`);
      ids.push(op.operationId!);
    }
  }
  assert.is(new Set(ids).size, ids.length, "operationIds are unique");
});

t("routes an ingest key may not call list 403; those it may call, and public ones, do not", ({ doc }) => {
  const op = (path: string, method: string) => {
    const item = doc.paths[`/api/v1${path}`];
    assert.ok(item, `${path} is in the document`);
    return item[method];
  };
  for (const [path, method] of [["/config/plans", "post"], ["/users", "post"], ["/teams/{team_id}", "get"], ["/products", "get"]] as const) {
    assert.ok(op(path, method)?.responses?.["403"], `${method.toUpperCase()} ${path} lists 403`);
  }
  for (const [path, method] of [["/events/batch", "post"], ["/health", "get"]] as const) {
    assert.not.ok(op(path, method)?.responses?.["403"], `${method.toUpperCase()} ${path} lists no 403`);
  }
});

/** A valid value of each string format the answers declare (a nullable object is told apart by validating it). */
const FORMATS: Record<string, string> = {
  "date-time": "2026-12-05T01:02:03.456Z",
  date: "2026-12-05",
  uuid: "0b9f4e0c-5d7a-4c1e-9a3b-2f6d8e1c7a55",
  uri: "https://example.com/hook",
  email: "ops@example.com",
};

/**
 * A value of `schema`: with `nulls`, null wherever the schema allows it; without, a value of
 * the other alternative. Every declared property is present, arrays hold two items.
 */
function sample(schema: any, nulls: boolean, depth = 0): unknown {
  if (depth > 12) return null;
  if (Array.isArray(schema.anyOf)) {
    const alternatives = schema.anyOf.filter((b: any) => (nulls ? true : b.type !== "null"));
    const chosen = nulls && schema.anyOf.some((b: any) => b.type === "null") ? { type: "null" } : alternatives[0];
    return sample(chosen, nulls, depth + 1);
  }
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? (nulls && schema.type.includes("null") ? "null" : schema.type.find((x: string) => x !== "null")) : schema.type;
  switch (type) {
    case "null":
      return null;
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [k, s] of Object.entries<any>(schema.properties ?? {})) out[k] = sample(s, nulls, depth + 1);
      if (schema.additionalProperties && typeof schema.additionalProperties === "object") out.extra = sample(schema.additionalProperties, nulls, depth + 1);
      return out;
    }
    case "array":
      return [sample(schema.items ?? {}, nulls, depth + 1), sample(schema.items ?? {}, !nulls, depth + 1)];
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

t("every answer's schema serializes to the same JSON in the serializer's form (gateway/serialization.ts)", ({ doc }) => {
  let checked = 0;
  for (const ops of Object.values<Record<string, any>>(doc.paths)) {
    for (const op of Object.values<any>(ops)) {
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        const schema = response.content?.["application/json"]?.schema;
        if (!schema) continue;
        const declared = fastJsonStringify(schema);
        const fast = fastJsonStringify(forSerializer(schema) as never);
        for (const nulls of [true, false]) {
          const value = sample(schema, nulls);
          assert.is(fast(value), declared(value), `${op.operationId} ${status} (${nulls ? "nulls" : "values"})`);
        }
        checked++;
      }
    }
  }
  assert.ok(checked > 50, `answers checked: ${checked}`);
});

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
