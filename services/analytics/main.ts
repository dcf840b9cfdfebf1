// Entry point of the analytics service as its own process (split mode, Kubernetes).
import "@meter/lib/v8-flags";
import { peerUrls } from "@meter/lib/config";
import { serviceMain } from "@meter/lib/service-main";
import { analyticsConfigSchema, analyticsSettings } from "./config.ts";
import { createAnalyticsService } from "./index.ts";

await serviceMain({
  name: "analytics",
  configSchema: analyticsConfigSchema,
  create: ({ db, logger, config }) =>
    createAnalyticsService({ db, logger, peers: peerUrls(config), ...analyticsSettings(config) }),
});
