import { Type, serviceConfigFields } from "@meter/lib/config";

export const tenancyConfigSchema = Type.Object({
  ...serviceConfigFields,
  PORT: Type.Integer({ default: 9091, minimum: 0, maximum: 65535 }),
  MONGODB_DB: Type.String({ default: "meter_tenancy", minLength: 1 }),
});
