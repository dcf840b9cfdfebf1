import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

/** 256 random bits, recognisable by its prefix. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64url");
}

/** `sha256=` + hex HMAC-SHA256 over `<timestamp>.<raw body>`, keyed with the endpoint's secret. */
export function sign(secret: string, timestamp: number, body: string): string {
  return "sha256=" + createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

/**
 * Development-only key used when WEBHOOKS_SECRET_KEY is unset. It is public (it is in this
 * file), so secrets stored under it are obfuscated, not protected. Never run production on it.
 */
export const DEVELOPMENT_SECRET_KEY = createHash("sha256").update("meter-webhooks-DEVELOPMENT-ONLY-key").digest();

/** Parses WEBHOOKS_SECRET_KEY: 32 bytes as 64 hex characters or as base64. */
export function parseSecretKey(text: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error("WEBHOOKS_SECRET_KEY must be 32 bytes, as 64 hex characters or base64");
  return key;
}

/** Parses WEBHOOKS_SECRET_KEY_PREVIOUS: keys of WEBHOOKS_SECRET_KEY's form, separated by commas. */
export function parsePreviousKeys(text: string | undefined): Buffer[] {
  const keys = (text ?? "").split(",").map((k) => k.trim()).filter((k) => k !== "");
  return keys.map((k, i) => {
    try {
      return parseSecretKey(k);
    } catch {
      throw new Error(`WEBHOOKS_SECRET_KEY_PREVIOUS: key ${i + 1} must be 32 bytes, as 64 hex characters or base64`);
    }
  });
}

/** What SecretBox.check found of a sealed secret: opens with the current key, with a previous one only, or with none. */
export type SealState = "current" | "previous" | "unopenable";

/**
 * Signing secrets at rest: AES-256-GCM with a random 96-bit IV; the endpoint id is bound as
 * additional data, so a ciphertext copied to another endpoint does not decrypt.
 * Stored form: "v1." + base64url(iv | tag | ciphertext). Sealed with the current key; opened
 * with it or, during a rotation, with a previous one (GCM's tag tells which key sealed it).
 */
export class SecretBox {
  private readonly previous: readonly Buffer[];

  constructor(
    private readonly key: Buffer,
    previous: readonly Buffer[] = [],
  ) {
    if (key.length !== 32 || previous.some((k) => k.length !== 32)) throw new Error("secret keys must be 32 bytes");
    this.previous = previous;
  }

  seal(secret: string, endpointId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(endpointId));
    const ct = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    return "v1." + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64url");
  }

  open(sealed: string, endpointId: string): string {
    for (const key of [this.key, ...this.previous]) {
      const secret = openWith(key, sealed, endpointId);
      if (secret !== undefined) return secret;
    }
    throw new Error("the signing secret opens with no configured key (WEBHOOKS_SECRET_KEY, WEBHOOKS_SECRET_KEY_PREVIOUS): it was sealed with another");
  }

  /** Which key opens `sealed`: the current one, only a previous one (re-seal it), or none. */
  check(sealed: string, endpointId: string): SealState {
    if (openWith(this.key, sealed, endpointId) !== undefined) return "current";
    return this.previous.some((k) => openWith(k, sealed, endpointId) !== undefined) ? "previous" : "unopenable";
  }
}

/** The secret `key` opens, or undefined when `key` did not seal it (its tag does not verify). */
function openWith(key: Buffer, sealed: string, endpointId: string): string | undefined {
  if (!sealed.startsWith("v1.")) throw new Error("unknown sealed secret format");
  const raw = Buffer.from(sealed.slice(3), "base64url");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(endpointId));
  decipher.setAuthTag(raw.subarray(12, 28));
  try {
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
