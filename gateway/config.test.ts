import { existsSync, readFileSync } from "node:fs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "@meter/lib/config";
import { CONNECTION_DEFAULTS, gatewayConfigSchema, protectionSettings } from "./config.ts";
import { resolveConnectionLimits } from "./connection-limits.ts";

test("connection limits: defaults, env values, and refusals at start-up", () => {
  assert.equal(protectionSettings(loadConfig(gatewayConfigSchema, {})).connections, CONNECTION_DEFAULTS);
  const set = loadConfig(gatewayConfigSchema, { HTTP_BODY_TIMEOUT_MS: "5000", HTTP_MAX_CONNECTIONS_PER_ADDRESS: "0", HTTP_MAX_CONNECTIONS: "900" });
  assert.equal(protectionSettings(set).connections, { ...CONNECTION_DEFAULTS, bodyTimeoutMs: 5000, maxPerAddress: 0, max: 900 });
  assert.throws(() => loadConfig(gatewayConfigSchema, { HTTP_BODY_TIMEOUT_MS: "soon" }), /HTTP_BODY_TIMEOUT_MS/);
  assert.throws(() => loadConfig(gatewayConfigSchema, { HTTP_MAX_CONNECTIONS: "-1" }), /HTTP_MAX_CONNECTIONS/);
  const inverted = loadConfig(gatewayConfigSchema, { HTTP_HEADERS_TIMEOUT_MS: "20000", HTTP_REQUEST_TIMEOUT_MS: "10000" });
  assert.throws(() => protectionSettings(inverted), /HTTP_HEADERS_TIMEOUT_MS \(20000\) must not exceed HTTP_REQUEST_TIMEOUT_MS/);
});

test("peer URLs must be base URLs; the shutdown grace stays under the process's deadline", () => {
  assert.is(loadConfig(gatewayConfigSchema, { TENANCY_URL: "http://tenancy:9091" }).TENANCY_URL, "http://tenancy:9091");
  for (const bad of ["tenancy:9091", "http://tenancy:9091/api", "ftp://tenancy"]) assert.throws(() => loadConfig(gatewayConfigSchema, { TENANCY_URL: bad }), /TENANCY_URL/);
  assert.throws(() => loadConfig(gatewayConfigSchema, { HTTP_SHUTDOWN_GRACE_MS: "10000" }), /HTTP_SHUTDOWN_GRACE_MS/);
  // A level pino does not know is refused with the other problems, not left to crash the logger.
  assert.throws(() => loadConfig(gatewayConfigSchema, { LOG_LEVEL: "warning" }), /LOG_LEVEL/);
  assert.is(loadConfig(gatewayConfigSchema, { LOG_LEVEL: "warn" }).LOG_LEVEL, "warn");
});

test("HTTP_MAX_CONNECTIONS 0 is half the process's open-file limit, below it", () => {
  const auto = resolveConnectionLimits({ max: 0 }).max;
  assert.ok(auto >= 1);
  assert.is(resolveConnectionLimits({ max: 123 }).max, 123);
  const limits = existsSync("/proc/self/limits") ? readFileSync("/proc/self/limits", "utf8") : "";
  const line = limits.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = Number(line?.split(/\s{2,}/)[1]);
  if (Number.isSafeInteger(soft)) assert.is(auto, Math.floor(soft / 2));
});

test.run();
