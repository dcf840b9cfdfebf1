import fp from "fastify-plugin";
import type { FastifyRequest } from "fastify";
import { FairShare } from "@meter/lib/fair-share";
import { KeyedGate } from "@meter/lib/keyed-gate";

declare module "fastify" {
  interface FastifyContextConfig {
    /** An ingestion batch: admitted per product before its body is read (admissionPlugin). */
    perProductBatch?: boolean;
  }
}

/**
 * One product's ingestion burst must not take the process from the others: a batch costs the
 * gateway its JSON parse and validation, and the services its conversion and writes, all CPU
 * of the same process in all-in-one. So at most `limit` batches of one product are admitted
 * at once, before their bodies are read (a waiting one costs a socket and nothing else; its
 * body waits in the kernel); the product's others wait in turn, and past 256 waiting are
 * refused with 503 and Retry-After. Other products' requests never wait for them.
 * Bounding concurrency does not bound the time a product takes: while another product is
 * being served, a product that has used more than its share of recent service time waits
 * before its next batch (lib/src/fair-share.ts; `share` 0: off).
 */
export const admissionPlugin = fp<{ limit: number; share?: { share: number; windowMs: number } }>(async (app, opts) => {
  const gate = new KeyedGate(opts.limit);
  const fair = new FairShare(opts.share?.share ?? 0, opts.share?.windowMs ?? 1_000);
  const held = new WeakMap<FastifyRequest, () => void>();
  app.addHook("preParsing", async (request) => {
    if (!request.productId) return;
    fair.seen(request.productId);
    if (!request.routeOptions.config.perProductBatch) return;
    const release = await gate.acquire(request.productId);
    let answered: () => void;
    try {
      answered = await fair.admit(request.productId);
    } catch (err) {
      release();
      throw err;
    }
    const done = () => (answered(), release());
    // Its client gave up while it waited: onRequestAbort has come and gone, so give back now.
    if (request.raw.socket?.destroyed) return done();
    held.set(request, done);
  });
  const release = async (request: FastifyRequest) => {
    held.get(request)?.();
    held.delete(request);
  };
  app.addHook("onResponse", release);
  app.addHook("onRequestAbort", release);
});
