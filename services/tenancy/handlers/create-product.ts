import { characters } from "@meter/lib/characters";
import type { ServiceImpl } from "@connectrpc/connect";
import type { CreateProductRequest, TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { rpcError } from "@meter/lib/errors";
import { newKeyDoc } from "./common.ts";
import { toProduct } from "./mapping.ts";
import type { TenancyDeps } from "../deps.ts";

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function validate(req: CreateProductRequest): void {
  if (req.name.trim().length === 0) throw rpcError.invalid("name must not be empty");
  if (characters(req.name) > 255) throw rpcError.invalid("name must be at most 255 characters");
  if (req.contactName !== undefined && characters(req.contactName) > 255) {
    throw rpcError.invalid("contact_name must be at most 255 characters");
  }
  if (req.contactEmail !== undefined && (req.contactEmail.length > 320 || !EMAIL.test(req.contactEmail))) {
    throw rpcError.invalid("contact_email must be an email address");
  }
}

export function createProduct(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["createProduct"] {
  return async (req) => {
    validate(req);
    const product = await deps.products.create({
      name: req.name,
      contact_name: req.contactName ?? null,
      contact_email: req.contactEmail ?? null,
    });
    const { apiKey, doc } = newKeyDoc(product._id, { name: "default", scope: "admin", expiresAt: null }, product.created_at);
    await deps.keys.insert(doc);
    deps.logger.info({ productId: product._id, slug: product.slug }, "product created");
    return { product: toProduct(product), apiKey };
  };
}
