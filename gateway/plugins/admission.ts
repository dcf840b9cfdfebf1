import fp from "fastify-plugin";
import { FairShare } from "@meter/lib/fair-share";
import { InFlightBound } from "@meter/lib/in-flight-bound";
import { batchBytesInFlight } from "@meter/lib/metrics";
import { KeyedGate } from "@meter/lib/keyed-gate";
import { BATCH_BODY_LIMIT } from "../routes/events.ts";
import { HttpError } from "../errors.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** An ingestion batch: admitted per product before its body is read (admissionPlugin). */
    perProductBatch?: boolean;
  }
}

/**
 * Longest a batch waits for admission and its own turn, at the pace of its product's recent
 * batches: half the clients' 10 s request timeout, so a batch is not kept so long that its
 * client gives up and sends it again while it is still to be stored.
 */
const MAX_WAIT_MS = 5_000;

/**
 * One product's ingestion burst must not take the process from the others: a batch costs the
 * gateway its JSON parse and validation, and the services its conversion and writes, all CPU
 * of the same process in all-in-one. So at most `limit` batches of one product are admitted
 * at once, before their bodies are read (a waiting one costs a socket and nothing else; its
 * body waits in the kernel); the product's others wait in turn, as long as the line ahead
 * and its own turn take at most `maxWaitMs` (5 s) at the pace of its recent batches: past it a batch is refused
 * at once, and one already waiting as soon as its wait and its turn pass it (lib/src/keyed-gate.ts),
 * 429 with Retry-After, so that what a product has waiting is stored within seconds,
 * never long after its clients gave up (the ingestion service bounds the events it holds the
 * same way). Other products' requests never wait for them.
 * Bounding concurrency does not bound the time a product takes: while another product is
 * being served, a product that has used more than its share of recent service time waits
 * before its next batch (lib/src/fair-share.ts; `share` 0: off).
 * Every product's admitted batches together hold at most `maxBytes` of bodies (by their
 * Content-Length; one without counts as the largest allowed), so many products sending at once
 * cannot take the process past its memory: beyond it, 429 with Retry-After at the pace the
 * process has been getting through batches (lib/src/in-flight-bound.ts).
 */
export const admissionPlugin = fp<{ limit: number; maxWaitMs?: number; share?: { share: number; windowMs: number }; maxBytes?: number }>(async (app, opts) => {
  const gate = new KeyedGate(opts.limit, undefined, opts.maxWaitMs ?? MAX_WAIT_MS);
  const fair = new FairShare(opts.share?.share ?? 0, opts.share?.windowMs ?? 1_000);
  const bytes = new InFlightBound(opts.maxBytes ?? 96 * 1024 * 1024, undefined, undefined, (d) => batchBytesInFlight.inc(d));
  app.addHook("preParsing", async (request, reply) => {
    if (!request.productId) return;
    fair.seen(request.productId);
    if (!request.routeOptions.config.perProductBatch) return;
    const release = await gate.acquire(request.productId);
    let answered: () => void;
    let held: () => void;
    try {
      answered = await fair.admit(request.productId);
      try {
        const declared = Number(request.headers["content-length"]);
        held = bytes.take(Number.isFinite(declared) && declared >= 0 ? Math.min(declared, BATCH_BODY_LIMIT) : BATCH_BODY_LIMIT, "bytes of batches");
      } catch (err) {
        answered();
        throw err;
      }
    } catch (err) {
      release();
      throw err;
    }
    const done = () => (held(), answered(), release());
    // Its client gave up while it waited: give the place back and end the request here (its
    // body will never come, so reading it would hold the request open for good).
    if (request.raw.socket?.destroyed) {
      done();
      throw new HttpError(408, "the client closed the connection while its batch waited for admission");
    }
    // The response closes once answered, or when the client goes away at any point after this
    // (a client timing out while its batch is being stored: neither onResponse nor
    // onRequestAbort comes then, and each such batch kept its place for good, until the
    // product's batches all waited forever).
    reply.raw.once("close", done);
  });
});
