import type { Db } from "mongodb";
import { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { ApiKeyStore } from "./store/api-keys.ts";
import { ProductStore } from "./store/products.ts";
import { createApiKey } from "./handlers/create-api-key.ts";
import { listApiKeys } from "./handlers/list-api-keys.ts";
import { revokeApiKey } from "./handlers/revoke-api-key.ts";
import { authenticate } from "./handlers/authenticate.ts";
import { createProduct } from "./handlers/create-product.ts";
import { listProducts } from "./handlers/list-products.ts";

/** The tenancy service: products and their API keys. */
export async function createTenancyService(opts: { db: Db; logger: Logger; peers?: PeerUrls }): Promise<ServiceModule> {
  const products = new ProductStore(opts.db);
  const keys = new ApiKeyStore(opts.db);
  await Promise.all([products.init(), keys.init()]);
  const deps = { products, keys, logger: opts.logger };
  return {
    name: "tenancy",
    serviceName: TenancyService.typeName,
    routes(router) {
      router.service(TenancyService, {
        createProduct: createProduct(deps),
        listProducts: listProducts(deps),
        authenticate: authenticate(deps),
        createApiKey: createApiKey(deps),
        listApiKeys: listApiKeys(deps),
        revokeApiKey: revokeApiKey(deps),
      });
    },
    healthy: () => pingDb(opts.db),
  };
}
