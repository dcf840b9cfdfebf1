import { promisify } from "node:util";
import { deflateRaw, inflateRawSync } from "node:zlib";
import { Binary } from "mongodb";

const deflate = promisify(deflateRaw);

/**
 * Text the ingestion service stores once and reads rarely (an outbox entry's payloads, a job's
 * offered ids), raw-deflated at level 1: the embedded database's inserts, whole-document
 * updates and deletes cost with a document's size. Async: the deflating runs off the event loop.
 */
export async function deflateText(text: string): Promise<Binary> {
  return new Binary(await deflate(text, { level: 1 }));
}

/** The text deflateText stored. */
export function inflateText(stored: Binary): string {
  return inflateRawSync(stored.value()).toString("utf8");
}
