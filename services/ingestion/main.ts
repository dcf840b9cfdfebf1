// Entry point of the ingestion service as its own process (split mode, Kubernetes).
import "@meter/lib/v8-flags";
import { peerUrls } from "@meter/lib/config";
import { serviceMain } from "@meter/lib/service-main";
import { ingestionConfigSchema, ingestionSettings } from "./config.ts";
import { createIngestionService } from "./index.ts";

await serviceMain({
  name: "ingestion",
  configSchema: ingestionConfigSchema,
  create: ({ db, logger, config }) =>
    createIngestionService({ db, logger, peers: peerUrls(config), ...ingestionSettings(config) }),
});
