import { Type, peerUrlFields } from "@meter/lib/config";

export const gatewayConfigSchema = Type.Object({
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  HOST: Type.String({ default: "0.0.0.0" }),
  LOG_LEVEL: Type.String({ default: "info" }),
  ...peerUrlFields,
  AUTH_CACHE_TTL_MS: Type.Integer({ default: 30_000, minimum: 0 }),
});
