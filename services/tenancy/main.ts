// Entry point of the tenancy service as its own process (split mode, Kubernetes).
import "@meter/lib/v8-flags";
import { serviceMain } from "@meter/lib/service-main";
import { tenancyConfigSchema } from "./config.ts";
import { createTenancyService } from "./index.ts";

await serviceMain({
  name: "tenancy",
  configSchema: tenancyConfigSchema,
  create: ({ db, logger }) => createTenancyService({ db, logger }),
});
