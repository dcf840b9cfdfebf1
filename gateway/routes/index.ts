import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { analyticsRoutes } from "./analytics.ts";
import { creditRoutes } from "./credits.ts";
import { eventRoutes } from "./events.ts";
import { healthRoutes } from "./health.ts";
import { keyRoutes } from "./keys.ts";
import { leaseRoutes } from "./leases.ts";
import { limitRoutes } from "./limits.ts";
import { planRoutes } from "./plans.ts";
import { portalRoutes } from "./portal.ts";
import { productRoutes } from "./products.ts";
import { teamRoutes } from "./teams.ts";
import { usageRoutes } from "./usage.ts";
import { userRoutes } from "./users.ts";
import { webhookRoutes } from "./webhooks.ts";

/** Every resource's routes, mounted under /api/v1. */
export const apiRoutes: FastifyPluginAsyncTypebox[] = [healthRoutes, productRoutes, keyRoutes, planRoutes, userRoutes, teamRoutes, eventRoutes, usageRoutes, limitRoutes, leaseRoutes, creditRoutes, webhookRoutes, analyticsRoutes, portalRoutes];
