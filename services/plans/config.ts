import { Type, peerUrlFields, serviceConfigFields } from "@meter/lib/config";

export const plansConfigSchema = Type.Object({
  ...serviceConfigFields,
  ...peerUrlFields,
  PORT: Type.Integer({ default: 9092, minimum: 0, maximum: 65535 }),
  MONGODB_DB: Type.String({ default: "meter_plans", minLength: 1 }),
});
