import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyReply } from "fastify";
import fp from "fastify-plugin";
import fastifyStatic from "@fastify/static";

/** Where `npm run build -w console` writes the web console. */
export const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../console/dist");
export const CONSOLE_PREFIX = "/console/";

/**
 * The web console at /console/, on the API's origin so that it calls /api/v1 with no CORS.
 * Hashed assets are cached for good; index.html never is, and answers every other path below
 * the prefix (the app routes in the browser). Without a build the prefix answers 503 with the
 * command that makes one, and the API is unaffected.
 */
export const consolePlugin = fp<{ root?: string }>(async (app, opts) => {
  const root = opts.root ?? CONSOLE_DIST;
  app.get("/console", { schema: { hide: true }, config: { public: true } }, async (_request, reply) => reply.redirect(CONSOLE_PREFIX));
  if (!existsSync(path.join(root, "index.html"))) {
    app.get(`${CONSOLE_PREFIX}*`, { schema: { hide: true }, config: { public: true } }, async (_request, reply) =>
      reply.code(503).send({ detail: "the console is not built: run `npm run build:console` (npm ci and npm start build it when stale)" }),
    );
    return;
  }
  await app.register(
    async (scope) => {
      // serve: false: only reply.sendFile; the routes below decide what each path answers.
      await scope.register(fastifyStatic, { root, serve: false });
      const shell = (reply: FastifyReply) => reply.header("cache-control", "no-cache").sendFile("index.html", { cacheControl: false });
      scope.get("/", { schema: { hide: true }, config: { public: true } }, async (_request, reply) => shell(reply));
      // A path that is not a built file is one of the app's own routes (deep links, reloads).
      scope.get("/*", { schema: { hide: true }, config: { public: true } }, async (request, reply) => {
        const rel = (request.params as { "*": string })["*"];
        const file = path.resolve(root, rel);
        const isFile = file.startsWith(root + path.sep) && existsSync(file) && statSync(file).isFile();
        // Hashed names change with their content: cached for good.
        if (rel.startsWith("assets/")) return isFile ? reply.sendFile(rel, { maxAge: "365d", immutable: true }) : reply.code(404).send({ detail: "no such console asset" });
        return isFile ? reply.sendFile(rel, { cacheControl: false }) : shell(reply);
      });
    },
    { prefix: CONSOLE_PREFIX },
  );
});
