import { randomBytes } from "node:crypto";
import { API_KEY_PREFIX } from "@meter/lib/api-keys";

export { API_KEY_PREFIX, hashApiKey, looksLikeApiKey } from "@meter/lib/api-keys";

const KEY_BYTES = 32; // 256 bits of entropy

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(KEY_BYTES).toString("base64url");
}

export function slugify(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60)
    .replace(/-+$/g, "");
  return slug || "product";
}
