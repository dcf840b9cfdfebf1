import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { healthRoutes } from "./health.ts";
import { productRoutes } from "./products.ts";

/** Every resource's routes, mounted under /api/v1. */
export const apiRoutes: FastifyPluginAsyncTypebox[] = [healthRoutes, productRoutes];
