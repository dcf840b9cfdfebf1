import type { Db } from "mongodb";
import { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { ApiKeyStore } from "./store/api-keys.ts";
import { PortalTokenStore } from "./store/portal-tokens.ts";
import { ProductStore } from "./store/products.ts";
import { createApiKey } from "./handlers/create-api-key.ts";
import { listApiKeys } from "./handlers/list-api-keys.ts";
import { revokeApiKey } from "./handlers/revoke-api-key.ts";
import { authenticate } from "./handlers/authenticate.ts";
import { createProduct } from "./handlers/create-product.ts";
import { listProducts } from "./handlers/list-products.ts";
import { authenticatePortalToken, createPortalToken, revokePortalTokens } from "./handlers/portal-tokens.ts";

/** The tenancy service: products, their API keys and their end users' portal tokens. */
export async function createTenancyService(opts: { db: Db; logger: Logger; peers?: PeerUrls }): Promise<ServiceModule> {
  const products = new ProductStore(opts.db);
  const keys = new ApiKeyStore(opts.db);
  const portalTokens = new PortalTokenStore(opts.db);
  await Promise.all([products.init(), keys.init(), portalTokens.init()]);
  const deps = { products, keys, portalTokens, logger: opts.logger };
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
        createPortalToken: createPortalToken(deps),
        authenticatePortalToken: authenticatePortalToken(deps),
        revokePortalTokens: revokePortalTokens(deps),
      });
    },
    healthy: () => pingDb(opts.db),
  };
}
