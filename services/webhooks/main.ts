// Entry point of the webhooks service as its own process (split mode, Kubernetes).
import { peerUrls } from "@meter/lib/config";
import { serviceMain } from "@meter/lib/service-main";
import { webhooksConfigSchema } from "./config.ts";
import { createWebhooksService } from "./index.ts";
import { parseSecretKey } from "./secrets.ts";

await serviceMain({
  name: "webhooks",
  configSchema: webhooksConfigSchema,
  create: ({ db, logger, config }) =>
    createWebhooksService({
      db,
      logger,
      peers: peerUrls(config),
      secretKey: config.WEBHOOKS_SECRET_KEY ? parseSecretKey(config.WEBHOOKS_SECRET_KEY) : undefined,
      allowInsecureUrls: config.WEBHOOKS_ALLOW_INSECURE_URLS,
    }),
});
