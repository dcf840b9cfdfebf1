import { webhookSecrets } from "@meter/lib/metrics";
import type { WebhooksDeps } from "../deps.ts";

/**
 * The key rotation's second half, run at every start and every ten minutes: each signing secret that only a previous
 * key (WEBHOOKS_SECRET_KEY_PREVIOUS) opens is sealed again with WEBHOOKS_SECRET_KEY, so that the
 * previous key can be dropped once this has run; and secrets that no configured key opens are
 * counted and said (their deliveries fail until the key that sealed them is configured again).
 * Each re-seal is conditional on the stored form, so replicas starting together and a rotation
 * through the API meanwhile change nothing twice.
 */
export async function resealSecrets(deps: Pick<WebhooksDeps, "endpoints" | "secrets" | "logger">): Promise<{ resealed: number; previous: number; unopenable: number }> {
  let current = 0;
  let previous = 0;
  let resealed = 0;
  let unopenable = 0;
  for await (const e of deps.endpoints.sealedSecrets()) {
    const state = deps.secrets.check(e.secret_sealed, e._id);
    if (state === "current") current++;
    else if (state === "unopenable") unopenable++;
    else {
      previous++;
      // Conditional: one changed meanwhile (a rotation through the API) is looked at by the next pass.
      if (await deps.endpoints.reseal(e._id, e.secret_sealed, deps.secrets.seal(deps.secrets.open(e.secret_sealed, e._id), e._id))) resealed++;
    }
  }
  // What this pass found, before it sealed anything again: `previous` 0 is the sign that nothing needs the old key.
  webhookSecrets.set({ key: "current" }, current);
  webhookSecrets.set({ key: "previous" }, previous);
  webhookSecrets.set({ key: "none" }, unopenable);
  if (previous > 0) {
    deps.logger.info(
      { found: previous, resealed },
      "signing secrets sealed with a previous key were sealed again with WEBHOOKS_SECRET_KEY; drop WEBHOOKS_SECRET_KEY_PREVIOUS once a pass finds none (meter_webhook_secrets{key=\"previous\"} 0)",
    );
  }
  if (unopenable > 0) {
    deps.logger.error(
      { endpoints: unopenable },
      "signing secrets that no configured key opens: their deliveries fail until WEBHOOKS_SECRET_KEY (or WEBHOOKS_SECRET_KEY_PREVIOUS) holds the key that sealed them; after a lost key, rotate each endpoint's secret (POST /webhooks/endpoints/{id}/rotate-secret)",
    );
  }
  return { resealed, previous, unopenable };
}
