// The console's static serving: its files, the app's own routes answered with index.html, the
// console's CSP beside the API's unchanged one, and a clear 503 when no build exists.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Fastify from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CONSOLE_CSP, securityHeadersPlugin } from "./security-headers.ts";
import { consolePlugin } from "./console.ts";

const t = suite<{ root: string }>("console plugin");

t.before(async (ctx) => {
  ctx.root = await mkdtemp(path.join(os.tmpdir(), "console-dist-"));
  await mkdir(path.join(ctx.root, "assets"));
  await writeFile(path.join(ctx.root, "index.html"), "<!doctype html><title>console</title>");
  await writeFile(path.join(ctx.root, "assets", "index-abc123.js"), "console.log(1)");
});
t.after(async ({ root }) => rm(root, { recursive: true, force: true }));

async function app(root: string) {
  const a = Fastify();
  await a.register(securityHeadersPlugin);
  await a.register(consolePlugin, { root });
  a.get("/api/v1/thing", async () => ({ ok: true }));
  await a.ready();
  return a;
}

t("serves index.html at /console/ and for every app route, uncached, with the console's CSP", async ({ root }) => {
  const a = await app(root);
  for (const url of ["/console/", "/console/users/alice%2Fbob", "/console/plans?edit=1", "/console/webhooks/123"]) {
    const res = await a.inject(url);
    assert.is(res.statusCode, 200, url);
    assert.match(res.body, /<title>console<\/title>/, url);
    assert.is(res.headers["cache-control"], "no-cache", url);
    assert.is(res.headers["content-security-policy"], CONSOLE_CSP, url);
    assert.match(String(res.headers["content-type"]), /^text\/html/);
  }
  const redirect = await a.inject("/console");
  assert.is(redirect.statusCode, 302);
  assert.is(redirect.headers.location, "/console/");
  await a.close();
});

t("hashed assets are cached for good; a missing asset is 404, never the app", async ({ root }) => {
  const a = await app(root);
  const js = await a.inject("/console/assets/index-abc123.js");
  assert.is(js.statusCode, 200);
  assert.is(js.body, "console.log(1)");
  assert.match(String(js.headers["cache-control"]), /immutable/);
  assert.is(js.headers["content-security-policy"], CONSOLE_CSP);
  const missing = await a.inject("/console/assets/gone.js");
  assert.is(missing.statusCode, 404);
  const outside = await a.inject("/console/..%2f..%2fetc%2fpasswd");
  assert.not.match(outside.body, /root:/);
  await a.close();
});

t("the CSP allows nothing but the console's own origin, and the API keeps its own", async ({ root }) => {
  for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) assert.ok(CONSOLE_CSP.includes(directive), directive);
  assert.not.match(CONSOLE_CSP, /unsafe|https:|\*/);
  const a = await app(root);
  const api = await a.inject("/api/v1/thing");
  assert.is(api.headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
  await a.close();
});

t("without a build, /console/ says how to make one (503)", async ({ root }) => {
  const a = await app(path.join(root, "nowhere"));
  const res = await a.inject("/console/");
  assert.is(res.statusCode, 503);
  assert.match(res.json().detail, /npm run build:console/);
  await a.close();
});

t.run();
