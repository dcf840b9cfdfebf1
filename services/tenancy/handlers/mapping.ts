import { create } from "@bufbuild/protobuf";
import { ApiKeySchema, ProductSchema, type ApiKey, type Product } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { toTimestamp } from "@meter/lib/time";
import type { ApiKeyDoc } from "../store/api-keys.ts";
import type { ProductDoc } from "../store/products.ts";

export function toProduct(doc: ProductDoc): Product {
  return create(ProductSchema, {
    id: doc._id,
    name: doc.name,
    slug: doc.slug,
    contactName: doc.contact_name ?? undefined,
    contactEmail: doc.contact_email ?? undefined,
    createdAt: toTimestamp(doc.created_at),
  });
}

export function toApiKey(doc: ApiKeyDoc): ApiKey {
  return create(ApiKeySchema, {
    id: doc.key_id,
    name: doc.name,
    scope: doc.scope,
    prefix: doc.display_prefix,
    createdAt: toTimestamp(doc.created_at),
    lastUsedAt: doc.last_used_at ? toTimestamp(doc.last_used_at) : undefined,
    expiresAt: doc.expires_at ? toTimestamp(doc.expires_at) : undefined,
  });
}
