import { createHash } from "node:crypto";
import fp from "fastify-plugin";

/** Headers of every answer: JSON, errors, the OpenAPI document and the reference page alike. */
const COMMON = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** Nothing is ever loaded from a JSON answer. */
const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Both pages: calls to this origin alone, no plugins, no base or form targets, never framed. */
const SAME_ORIGIN_ONLY = ["connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"];

/**
 * The reference page (/api/v1/docs) runs its bundled script and the one inline script that
 * starts it, admitted by its hash and no other inline script; inline styles (the bundle injects
 * them); fonts and images from this origin only (Scalar's default fonts are off, docs.ts); it
 * reads the OpenAPI document and calls the API on this origin only.
 */
export function pageCsp(html: string): string {
  const hashes = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${createHash("sha256").update(m[1]!).digest("base64")}'`,
  );
  return [
    "default-src 'self'",
    ["script-src 'self'", ...hashes].join(" "),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    ...SAME_ORIGIN_ONLY,
  ].join("; ");
}

/**
 * The console (/console/) runs only its own bundled scripts and style sheets (no inline code,
 * no other origin) and talks to the API on this origin alone.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  ...SAME_ORIGIN_ONLY,
].join("; ");

/** The headers of a JSON answer, for the few answers Fastify makes before any hook runs. */
export const API_HEADERS: Record<string, string> = { ...COMMON, "content-security-policy": API_CSP };

/**
 * Security headers on every answer of the gateway, set in one onSend hook of the root so that
 * routes registered by plugins (the reference page's) get them too.
 */
export const securityHeadersPlugin = fp(async (app) => {
  app.addHook("onSend", async (request, reply, payload) => {
    reply.headers(COMMON);
    const type = String(reply.getHeader("content-type") ?? "");
    const console = request.url === "/console" || request.url.startsWith("/console/");
    const page = type.startsWith("text/html") ? pageCsp(typeof payload === "string" ? payload : "") : API_CSP;
    reply.header("content-security-policy", console ? CONSOLE_CSP : page);
    return payload;
  });
});
