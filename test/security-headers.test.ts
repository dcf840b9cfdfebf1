// Every answer of the gateway carries the same security headers: API answers, errors, the
// OpenAPI document and the reference page (served by a plugin's own routes).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startTestStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack }>("security headers");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const COMMON = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

t("API answers, errors, the OpenAPI document and the docs page all carry them", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const base = new URL(stack.apiUrl);
  const answers = [
    ["/api/v1/health", 200],
    ["/api/v1/config/plans", 401],
    ["/api/v1/openapi.json", 200],
    ["/api/v1/docs", 200],
    ["/api/v1/docs/js/scalar.js", 200],
    ["/api/v1/no-such-route", 404],
  ] as const;
  for (const [path, status] of answers) {
    const res = await fetch(new URL(path, base));
    await res.arrayBuffer();
    assert.is(res.status, status, path);
    for (const [name, value] of Object.entries(COMMON)) assert.is(res.headers.get(name), value, `${path}: ${name}`);
    const csp = res.headers.get("content-security-policy") ?? "";
    assert.match(csp, /frame-ancestors 'none'/, `${path}: CSP`);
    if (path === "/api/v1/docs") {
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /connect-src 'self'/);
    } else assert.match(csp, /default-src 'none'/, path);
  }
  const authed = await api.get("/config/plans");
  assert.is(authed.status, 200);
  assert.is(authed.headers.get("x-content-type-options"), "nosniff");
});

t.run();
