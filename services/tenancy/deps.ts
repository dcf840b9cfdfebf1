import type { Logger } from "@meter/lib/logger";
import type { ApiKeyStore } from "./store/api-keys.ts";
import type { ProductStore } from "./store/products.ts";

export interface TenancyDeps {
  products: ProductStore;
  keys: ApiKeyStore;
  logger: Logger;
}
