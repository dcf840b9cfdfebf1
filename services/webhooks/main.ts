// Entry point of the webhooks service as its own process (split mode, Kubernetes).
import { peerUrls } from "@meter/lib/config";
import { serviceMain } from "@meter/lib/service-main";
import { webhooksConfigSchema, webhooksSettings } from "./config.ts";
import { createWebhooksService } from "./index.ts";

await serviceMain({
  name: "webhooks",
  configSchema: webhooksConfigSchema,
  create: ({ db, logger, config }) =>
    createWebhooksService({ db, logger, peers: peerUrls(config), ...webhooksSettings(config) }),
});
