import { Type, peerUrlFields, serviceConfigFields } from "@meter/lib/config";

export const webhooksConfigSchema = Type.Object({
  ...serviceConfigFields,
  ...peerUrlFields,
  PORT: Type.Integer({ default: 9095, minimum: 0, maximum: 65535 }),
  MONGODB_DB: Type.String({ default: "meter_webhooks", minLength: 1 }),
});
