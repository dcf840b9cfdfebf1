import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Product } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { Body, DateTime, Nullable, errors, publicRoute } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

const ProductBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.String(),
  slug: Type.String(),
  contact_name: Nullable(Type.String()),
  contact_email: Nullable(Type.String()),
  created_at: DateTime,
});

const CreatedProductBody = Type.Object({
  ...ProductBody.properties,
  api_key: Type.String({ description: "Shown once; store it now" }),
});

const CreateProductBody = Body({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  contact_name: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  contact_email: Type.Optional(Nullable(Type.String({ format: "email", maxLength: 320 }))),
});

function productJson(p: Product) {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    contact_name: p.contactName ?? null,
    contact_email: p.contactEmail ?? null,
    created_at: timestampDate(p.createdAt!).toISOString(),
  };
}

export const productRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/products",
    publicRoute({
      operationId: "createProduct",
      summary: "Register a product and receive its API key (shown once)",
      tags: ["products"],
      body: CreateProductBody,
      response: { 201: CreatedProductBody, ...errors(400, 422) },
    }),
    async (request, reply) => {
      const res = await app.services.tenancy.createProduct(
        {
          name: request.body.name,
          contactName: request.body.contact_name ?? undefined,
          contactEmail: request.body.contact_email ?? undefined,
        },
        rpcOptions(request),
      );
      return reply.status(201).send({ ...productJson(res.product!), api_key: res.apiKey });
    },
  );

  app.get(
    "/products",
    {
      schema: {
        operationId: "listProducts",
        summary: "List the products of the calling key",
        tags: ["products"],
        response: { 200: Type.Array(ProductBody), ...errors(401) },
      },
    },
    async (request) => {
      const res = await app.services.tenancy.listProducts({ productId: request.productId }, rpcOptions(request));
      return res.products.map(productJson);
    },
  );
};
