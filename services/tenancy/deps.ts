import type { Logger } from "@meter/lib/logger";
import type { ApiKeyStore } from "./store/api-keys.ts";
import type { PortalTokenStore } from "./store/portal-tokens.ts";
import type { ProductStore } from "./store/products.ts";

export interface TenancyDeps {
  products: ProductStore;
  keys: ApiKeyStore;
  portalTokens: PortalTokenStore;
  logger: Logger;
}
