import { create } from "@bufbuild/protobuf";
import { ProductSchema, type Product } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { toTimestamp } from "@meter/lib/time";
import type { ProductDoc } from "./store/products.ts";

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
