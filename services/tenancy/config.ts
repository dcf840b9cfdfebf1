import { Type, serviceProcessFields } from "@meter/lib/config";

export const tenancyConfigSchema = Type.Object(serviceProcessFields({ port: 9091, db: "meter_tenancy" }));
