import { Type, peerUrlFields, serviceConfigFields } from "@meter/lib/config";

export const ingestionConfigSchema = Type.Object({
  ...serviceConfigFields,
  ...peerUrlFields,
  PORT: Type.Integer({ default: 9093, minimum: 0, maximum: 65535 }),
  MONGODB_DB: Type.String({ default: "meter_ingestion", minLength: 1 }),
});
