// Entry point of the plans service as its own process (split mode, Kubernetes).
import "@meter/lib/v8-flags";
import { peerUrls } from "@meter/lib/config";
import { serviceMain } from "@meter/lib/service-main";
import { plansConfigSchema, plansSettings } from "./config.ts";
import { createPlansService } from "./index.ts";

await serviceMain({
  name: "plans",
  configSchema: plansConfigSchema,
  create: ({ db, logger, config }) => createPlansService({ db, logger, peers: peerUrls(config), ...plansSettings(config) }),
});
