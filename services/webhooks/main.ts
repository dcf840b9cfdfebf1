// Entry point of the webhooks service as its own process (split mode, Kubernetes).
import "@meter/lib/v8-flags";
import { loadConfigOrExit, peerUrls } from "@meter/lib/config";
import { createLogger } from "@meter/lib/logger";
import { serviceMain } from "@meter/lib/service-main";
import { secretKeyProblem, webhooksConfigSchema, webhooksSettings } from "./config.ts";
import { createWebhooksService } from "./index.ts";

// As Kubernetes runs it, the process refuses to seal secrets with the public development key.
const problem = secretKeyProblem(loadConfigOrExit(webhooksConfigSchema, "webhooks"));
if (problem) {
  createLogger("webhooks").fatal(problem);
  process.exit(1);
}

await serviceMain({
  name: "webhooks",
  configSchema: webhooksConfigSchema,
  create: ({ db, logger, config }) =>
    createWebhooksService({ db, logger, peers: peerUrls(config), ...webhooksSettings(config) }),
});
