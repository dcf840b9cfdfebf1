// Generated from the gateway's OpenAPI document by `npm run generate -w console`; do not edit.
export interface paths {
    "/api/v1/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Service health */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/products": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the products of the calling key */
        get: operations["listProducts"];
        put?: never;
        /** Register a product and receive its API key (shown once) */
        post: operations["createProduct"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the product's API keys (never their secrets)
         * @description last_used_at is kept within a minute of the key's last use.
         */
        get: operations["listKeys"];
        put?: never;
        /**
         * Create an API key (the key is shown once)
         * @description A product holds at most 50 keys (400 beyond).
         */
        post: operations["createKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key
         * @description Every gateway refuses the key (401) within 5 seconds. 409 when it is the product's last admin key that has not expired, so that nobody locks the product out.
         */
        delete: operations["revokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/config/plans": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the product's plans with defaults filled in */
        get: operations["listPlans"];
        put?: never;
        /**
         * Create plans; names that already exist are skipped and listed in duplicates
         * @description At most 100 plans per request and 50 per product (422 beyond); a body of at most 1 MiB (413 beyond).
         */
        post: operations["createPlans"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/config/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The product's change marker, and the plans and users changed after a marker
         * @description The marker grows by one with every plan update (PATCH /config/plans/{plan_id}) and every subscription change (POST /users/{user_id}/subscription). A client holding cached sessions polls this with the marker it last saw and reloads only the sessions of the users listed or on the plans listed; `all: true` means reload every cached session (the client is too far behind, or the marker is not one this service gave). Without `since`, only the marker is answered.
         */
        get: operations["listConfigChanges"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/config/plans/{plan_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Change the fields sent and return the full plan */
        patch: operations["updatePlan"];
        trace?: never;
    };
    "/api/v1/users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The product's users in external_user_id order, with the current period's spend, cursor-paginated */
        get: operations["listUsers"];
        put?: never;
        /** Register an end user */
        post: operations["createUser"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One end user, with the plan of its current subscription */
        get: operations["getUser"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/subscription": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Subscribe a user to a plan for a billing period */
        post: operations["setSubscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/team": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Put a user in a team, or in none
         * @description A user belongs to at most one team. From now on the user's usage counts for the team too; usage before stays with the team it was counted for.
         */
        put: operations["setUserTeam"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The product's teams in external_team_id order, cursor-paginated */
        get: operations["listTeams"];
        put?: never;
        /** Create a team: users that share a budget */
        post: operations["createTeam"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One team, with the plan of its current subscription and its member count */
        get: operations["getTeam"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/subscription": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Subscribe a team to a plan for a billing period (the rules of a user's subscription)
         * @description The plan's caps apply to the team's sum; each entry of its limits counts the team's sum (scope team) or each member's own (scope member).
         */
        post: operations["setTeamSubscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/members": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The team's current members in external_user_id order, cursor-paginated */
        get: operations["listTeamMembers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/events/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Ingest a batch of usage events (idempotent on id)
         * @description At most 10,000 events and 10 MiB per batch (413 beyond). A malformed batch is refused whole (422), as is one with an event stamped more than 730 days before today (UTC) or more than 5 minutes in the future (the issues name each such event); fields an event does not define are ignored. 429 with Retry-After when the service holds more events than it stores in a few seconds (INGESTION_MAX_EVENTS_IN_FLIGHT): send the same batch again after it (event ids make a resend safe).
         */
        post: operations["ingestUsageEvents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/gate-events/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Ingest a batch of gate events (idempotent on id)
         * @description At most 10,000 events and 10 MiB per batch (413 beyond). A malformed batch is refused whole (422), as is one with a timestamp more than 90 days (INGESTION_GATE_EVENT_DAYS) ago or more than 15 minutes ahead of the service's clock (the issues name each such event); fields an event does not define are ignored. 429 with Retry-After when the service holds more events than it stores in a few seconds (INGESTION_MAX_EVENTS_IN_FLIGHT): send the same batch again after it (event ids make a resend safe).
         */
        post: operations["ingestGateEvents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Record a manual usage event
         * @description Cost: `cost` as given; else tokens priced from the user's plan; else zero (audit entry). A repeated idempotency_key answers 201 with the event first recorded.
         */
        post: operations["createManualEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Session bootstrap read by the client library on start and refresh */
        get: operations["getSession"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Usage of a user in a period, broken down by model */
        get: operations["getUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Usage of a team in a period (the sums over what its members spent while in it), broken down by model
         * @description current_period is the team's billing period in force now. A member's usage counts for the team it was a member of at the usage's timestamp: a member moved to another team leaves its past usage here.
         */
        get: operations["getTeamUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/gate-events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Gate events of a user, newest first, cursor-paginated */
        get: operations["listGateEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every dimension of a user with its usage and reset, for a server that checks a user without the client library
         * @description The list the session view carries in `limits`: total_spend, session_spend and model_limit:<model> when the plan has them, then one entry per entry of the plan's `limits`, in plan order; then, for a member of a team with a plan in force, the team plan's (reasons prefixed team:, scope team or member). Empty for a user without a plan and without such a team.
         */
        get: operations["getUserLimits"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The team-scope dimensions of a team's plan with the team's usage and resets
         * @description team:total_spend and team:model_limit:<model> when the team plan has them, then one entry per team-scope entry of its `limits`, each over the sums of the team's members. Member-scope limits count each member apart: they are in each member's GET /users/{user_id}/limits. Empty for a team without a plan in force.
         */
        get: operations["getTeamLimits"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/leases": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Lease a slice of the user's period caps and windows (budget lease)
         * @description Grants the holder a slice of cap - settled spend - slices outstanding, atomically, until expires_at; with `model`, also a slice of that model's token cap the same way; with `windows`, a slice of each window of the plan's `limits` named (cap x hard_gate_at - counted in the window - slices outstanding; a slice of a calendar window is worth nothing once it ends); with `team`, a slice of the period spend cap of the user's team and of each window of its team-scope limits named, kept beside the team's counts, shared by every member the holder serves. Asking again extends the holder's lease. Usage events spent from it carry its lease_id. 413 when the user's period has 1,000 live leases; 503 (retryable) when the budget changed under 50 grant attempts in a row.
         */
        post: operations["acquireLease"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/leases/{lease_id}/release": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Give back the unused part of a budget lease
         * @description The lease keeps exactly `used`; events still on their way settle against it, in either order.
         */
        post: operations["releaseLease"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The credit balance, pending credits, overdraft and grants of a user */
        get: operations["getCredits"];
        put?: never;
        /**
         * Grant a user prepaid credits
         * @description 201 with the grant (and its remaining) when new; the same id with the same fields again is a no-op answered 200; the same id with other fields is 409. A new grant first pays any overdraft. At most 1,000 live grants per user (409 beyond).
         */
        post: operations["createCreditGrant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/credits/{grant_id}/void": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Void a grant of a user: what is left of it goes to 0
         * @description Voiding a grant that is already voided, expired or depleted answers it unchanged.
         */
        post: operations["voidCreditGrant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/credits/ledger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The credit ledger of a user, newest first, cursor-paginated
         * @description Usage is summed per grant and UTC hour, so the ledger grows with time, not with events.
         */
        get: operations["listCreditLedger"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The credit balance, pending credits, overdraft and grants of a team (its shared pool, drawn after each member's own credits) */
        get: operations["getTeamCredits"];
        put?: never;
        /**
         * Grant a team (its shared pool, drawn after each member's own credits) prepaid credits
         * @description 201 with the grant (and its remaining) when new; the same id with the same fields again is a no-op answered 200; the same id with other fields is 409. A new grant first pays any overdraft. At most 1,000 live grants per team (409 beyond).
         */
        post: operations["createTeamCreditGrant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/credits/{grant_id}/void": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Void a grant of a team: what is left of it goes to 0
         * @description Voiding a grant that is already voided, expired or depleted answers it unchanged.
         */
        post: operations["voidTeamCreditGrant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/teams/{team_id}/credits/ledger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The credit ledger of a team's pool, newest first, cursor-paginated
         * @description Usage is summed per grant and UTC hour, so the ledger grows with time, not with events.
         */
        get: operations["listTeamCreditLedger"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List webhook endpoints (without secrets) */
        get: operations["listWebhookEndpoints"];
        put?: never;
        /** Register a webhook endpoint; the signing secret is in the response */
        post: operations["createWebhookEndpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/endpoints/{id}/secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Reveal an endpoint's signing secret */
        get: operations["getWebhookEndpointSecret"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/endpoints/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Remove an endpoint and its delivery log */
        delete: operations["deleteWebhookEndpoint"];
        options?: never;
        head?: never;
        /** Change the fields sent and return the full endpoint */
        patch: operations["updateWebhookEndpoint"];
        trace?: never;
    };
    "/api/v1/webhooks/endpoints/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Issue a new signing secret; the old one stops signing at once */
        post: operations["rotateWebhookEndpointSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/endpoints/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a signed webhook.test event now and report the answer (not retried, not logged) */
        post: operations["testWebhookEndpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/endpoints/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An endpoint's deliveries, newest first, cursor-paginated */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/summary": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Totals of the window and of the period before */
        get: operations["getAnalyticsSummary"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/timeseries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Cost, tokens and events per UTC day */
        get: operations["getAnalyticsTimeseries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/gate-timeseries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Soft and hard gate events per UTC day */
        get: operations["getAnalyticsGateTimeseries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/breakdown": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Cost and tokens per model with shares */
        get: operations["getAnalyticsBreakdown"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/top-users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Users with the highest cost */
        get: operations["getAnalyticsTopUsers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/top-teams": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Teams with the highest cost */
        get: operations["getAnalyticsTopTeams"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/analytics/plan-subscribers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Subscribers per plan */
        get: operations["getAnalyticsPlanSubscribers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/portal-tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Mint a portal token that reads this one user's state (GET /portal/me) and nothing else
         * @description For the product's backend: mint one per page view and hand it to the front end. Only the token's hash is stored; it is shown once. An admin or ingest key may mint.
         */
        post: operations["createPortalToken"];
        /**
         * Revoke every portal token of the user
         * @description Every gateway replica refuses them within 5 s (its authentication cache lasts at most 4 s).
         */
        delete: operations["revokePortalTokens"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/portal/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The portal token's user: plan, every dimension, credits, this period's usage by model, the latest gate events
         * @description Read from the end user's browser with `Authorization: Bearer <portal token>` (CORS open to any origin, no cookies). 401 for an expired or revoked token, and for a portal token on any other route. Rate-limited per token (429 with Retry-After).
         */
        get: operations["getPortalMe"];
        put?: never;
        post?: never;
        delete?: never;
        /** CORS preflight: any origin may send GET with an Authorization header */
        options: operations["preflightPortalMe"];
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/portal/widget.js": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The <meter-usage> custom element (JavaScript) that renders GET /portal/me */
        get: operations["getPortalWidget"];
        put?: never;
        post?: never;
        delete?: never;
        /** CORS preflight: any origin may send GET with an Authorization header */
        options: operations["preflightPortalWidget"];
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: never;
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        status: "ok" | "degraded";
                        database: "connected" | "disconnected";
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listProducts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        slug: string;
                        contact_name: string | null;
                        contact_email: string | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    }[];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createProduct: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    contact_name?: string | null;
                    contact_email?: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        slug: string;
                        contact_name: string | null;
                        contact_email: string | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /** @description Shown once; store it now */
                        api_key: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        keys: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            /** @description admin: every route; ingest: what a client process needs (health, plans, sessions, usage, events, leases) */
                            scope: "admin" | "ingest";
                            /** @description The key's first characters, to recognise it */
                            prefix: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            last_used_at: string | null;
                            expires_at: string | null;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    /** @default admin */
                    scope?: "admin" | "ingest";
                    expires_at?: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        /** @description admin: every route; ingest: what a client process needs (health, plans, sessions, usage, events, leases) */
                        scope: "admin" | "ingest";
                        /** @description The key's first characters, to recognise it */
                        prefix: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        expires_at: string | null;
                        /** @description Shown only here; store it now */
                        key: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    revokeKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listPlans: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        plans: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            max_spend_per_period: number | null;
                            max_spend_per_session: number | null;
                            session_timeout_minutes: number;
                            soft_gate_at: number;
                            hard_gate_at: number;
                            model_limits: {
                                [key: string]: {
                                    max_tokens_per_period: number;
                                };
                            };
                            cost_rates: {
                                [key: string]: {
                                    input: number;
                                    output: number;
                                };
                            };
                            default_cost_rate: {
                                input: number;
                                output: number;
                            } | null;
                            tool_costs: {
                                [key: string]: number;
                            };
                            default_tool_cost: number;
                            pre_call_estimate: boolean;
                            pre_call_buffer_tokens: number;
                            /** @description Empty for a plan without windows */
                            limits: {
                                name: string;
                                /** @enum {string} */
                                metric: "spend" | "tokens" | "requests";
                                max: number;
                                /** @enum {string} */
                                window: "minute" | "hour" | "day" | "week" | "month" | "period" | "rolling";
                                duration_minutes: number | null;
                                model: string | null;
                                soft_gate_at: number | null;
                                hard_gate_at: number | null;
                                /**
                                 * @description On a team's plan: team (the members' sum) or member (each member's own); team when not given
                                 * @enum {string}
                                 */
                                scope: "team" | "member";
                            }[];
                            /** @description IANA time zone of the calendar windows */
                            time_zone: string;
                            /** @description Prepaid credits extend the period spend cap */
                            credits_enabled: boolean;
                            credits_low_at: number | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            updated_at: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createPlans: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Applies to every plan that does not set its own (default 0.80) */
                    soft_gate_at?: number;
                    /** @description Applies to every plan that does not set its own (default 1.00) */
                    hard_gate_at?: number;
                    plans: {
                        name: string;
                        max_spend_per_period?: number | null;
                        max_spend_per_session?: number | null;
                        session_timeout_minutes?: number;
                        soft_gate_at?: number;
                        hard_gate_at?: number;
                        /** @description Token caps by model; at most 1,000 entries, names 1-255 characters */
                        model_limits?: {
                            [key: string]: {
                                max_tokens_per_period: number;
                            };
                        };
                        /** @description Rates by model; at most 1,000 entries, names 1-255 characters */
                        cost_rates?: {
                            [key: string]: {
                                /** @description Dollars, 0 to 1e9 */
                                input: number;
                                /** @description Dollars, 0 to 1e9 */
                                output: number;
                            };
                        };
                        default_cost_rate?: {
                            /** @description Dollars, 0 to 1e9 */
                            input: number;
                            /** @description Dollars, 0 to 1e9 */
                            output: number;
                        } | null;
                        /** @description Dollars per call by tool; at most 1,000 entries, names 1-255 characters */
                        tool_costs?: {
                            [key: string]: number;
                        };
                        /** @description Dollars, 0 to 1e9 */
                        default_tool_cost?: number;
                        pre_call_estimate?: boolean;
                        pre_call_buffer_tokens?: number;
                        limits?: {
                            /** @description 1-64 of a-z, 0-9, _ and -, unique in the plan; the gate reason is limit:<name> */
                            name: string;
                            /** @description spend (dollars at the plan's prices), tokens (input + output) or requests (metered calls) */
                            metric: string;
                            /** @description Dollars for spend, a whole number for tokens and requests; 0 blocks every call */
                            max: number;
                            /** @description minute, hour, day, week (from Monday), month (calendar windows in the plan's time_zone), period (the billing period) or rolling */
                            window: string;
                            duration_minutes?: number | null;
                            model?: string | null;
                            soft_gate_at?: number | null;
                            hard_gate_at?: number | null;
                            scope?: string | null;
                        }[] | null;
                        time_zone?: string | null;
                        /** @description Prepaid credits: the user's balance extends the period spend cap, usage beyond max_spend_per_period draws it (default false) */
                        credits_enabled?: boolean;
                        credits_low_at?: number | null;
                    }[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        plans: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            max_spend_per_period: number | null;
                            max_spend_per_session: number | null;
                            session_timeout_minutes: number;
                            soft_gate_at: number;
                            hard_gate_at: number;
                            model_limits: {
                                [key: string]: {
                                    max_tokens_per_period: number;
                                };
                            };
                            cost_rates: {
                                [key: string]: {
                                    input: number;
                                    output: number;
                                };
                            };
                            default_cost_rate: {
                                input: number;
                                output: number;
                            } | null;
                            tool_costs: {
                                [key: string]: number;
                            };
                            default_tool_cost: number;
                            pre_call_estimate: boolean;
                            pre_call_buffer_tokens: number;
                            /** @description Empty for a plan without windows */
                            limits: {
                                name: string;
                                /** @enum {string} */
                                metric: "spend" | "tokens" | "requests";
                                max: number;
                                /** @enum {string} */
                                window: "minute" | "hour" | "day" | "week" | "month" | "period" | "rolling";
                                duration_minutes: number | null;
                                model: string | null;
                                soft_gate_at: number | null;
                                hard_gate_at: number | null;
                                /**
                                 * @description On a team's plan: team (the members' sum) or member (each member's own); team when not given
                                 * @enum {string}
                                 */
                                scope: "team" | "member";
                            }[];
                            /** @description IANA time zone of the calendar windows */
                            time_zone: string;
                            /** @description Prepaid credits extend the period spend cap */
                            credits_enabled: boolean;
                            credits_low_at: number | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            updated_at: string;
                        }[];
                        duplicates: string[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listConfigChanges: {
        parameters: {
            query?: {
                /** @description The marker the caller last saw */
                since?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description 0 before the product's first change */
                        marker: number;
                        all: boolean;
                        /** @description Plans updated after since */
                        plan_ids: string[];
                        /** @description external_user_ids whose subscription or team was set after since */
                        user_ids: string[];
                        /** @description external_team_ids whose subscription was set after since: their members' sessions change */
                        team_ids: string[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    updatePlan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Plan id (UUID); anything else is not found */
                plan_id: string;
            };
            cookie?: never;
        };
        /** @description Any subset of the plan fields; only those sent change. null clears max_spend_* and default_cost_rate. */
        requestBody: {
            content: {
                "application/json": {
                    name?: string;
                    max_spend_per_period?: number | null;
                    max_spend_per_session?: number | null;
                    session_timeout_minutes?: number;
                    soft_gate_at?: number;
                    hard_gate_at?: number;
                    /** @description Token caps by model; at most 1,000 entries, names 1-255 characters */
                    model_limits?: {
                        [key: string]: {
                            max_tokens_per_period: number;
                        };
                    };
                    /** @description Rates by model; at most 1,000 entries, names 1-255 characters */
                    cost_rates?: {
                        [key: string]: {
                            /** @description Dollars, 0 to 1e9 */
                            input: number;
                            /** @description Dollars, 0 to 1e9 */
                            output: number;
                        };
                    };
                    default_cost_rate?: {
                        /** @description Dollars, 0 to 1e9 */
                        input: number;
                        /** @description Dollars, 0 to 1e9 */
                        output: number;
                    } | null;
                    /** @description Dollars per call by tool; at most 1,000 entries, names 1-255 characters */
                    tool_costs?: {
                        [key: string]: number;
                    };
                    /** @description Dollars, 0 to 1e9 */
                    default_tool_cost?: number;
                    pre_call_estimate?: boolean;
                    pre_call_buffer_tokens?: number;
                    limits?: {
                        /** @description 1-64 of a-z, 0-9, _ and -, unique in the plan; the gate reason is limit:<name> */
                        name: string;
                        /** @description spend (dollars at the plan's prices), tokens (input + output) or requests (metered calls) */
                        metric: string;
                        /** @description Dollars for spend, a whole number for tokens and requests; 0 blocks every call */
                        max: number;
                        /** @description minute, hour, day, week (from Monday), month (calendar windows in the plan's time_zone), period (the billing period) or rolling */
                        window: string;
                        duration_minutes?: number | null;
                        model?: string | null;
                        soft_gate_at?: number | null;
                        hard_gate_at?: number | null;
                        scope?: string | null;
                    }[] | null;
                    time_zone?: string | null;
                    /** @description Prepaid credits: the user's balance extends the period spend cap, usage beyond max_spend_per_period draws it (default false) */
                    credits_enabled?: boolean;
                    credits_low_at?: number | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        max_spend_per_period: number | null;
                        max_spend_per_session: number | null;
                        session_timeout_minutes: number;
                        soft_gate_at: number;
                        hard_gate_at: number;
                        model_limits: {
                            [key: string]: {
                                max_tokens_per_period: number;
                            };
                        };
                        cost_rates: {
                            [key: string]: {
                                input: number;
                                output: number;
                            };
                        };
                        default_cost_rate: {
                            input: number;
                            output: number;
                        } | null;
                        tool_costs: {
                            [key: string]: number;
                        };
                        default_tool_cost: number;
                        pre_call_estimate: boolean;
                        pre_call_buffer_tokens: number;
                        /** @description Empty for a plan without windows */
                        limits: {
                            name: string;
                            /** @enum {string} */
                            metric: "spend" | "tokens" | "requests";
                            max: number;
                            /** @enum {string} */
                            window: "minute" | "hour" | "day" | "week" | "month" | "period" | "rolling";
                            duration_minutes: number | null;
                            model: string | null;
                            soft_gate_at: number | null;
                            hard_gate_at: number | null;
                            /**
                             * @description On a team's plan: team (the members' sum) or member (each member's own); team when not given
                             * @enum {string}
                             */
                            scope: "team" | "member";
                        }[];
                        /** @description IANA time zone of the calendar windows */
                        time_zone: string;
                        /** @description Prepaid credits extend the period spend cap */
                        credits_enabled: boolean;
                        credits_low_at: number | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listUsers: {
        parameters: {
            query?: {
                /** @description Only users whose external_user_id starts with it (exact characters, case-sensitive; no pattern syntax) */
                prefix?: string;
                /** @description Only users whose current subscription is on the plan of this name */
                plan?: string;
                /** @description next_cursor of the previous page (same prefix and plan) */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        users: {
                            /** Format: uuid */
                            id: string;
                            external_user_id: string;
                            name: string | null;
                            plan_name: string | null;
                            billing_subscription_id: string | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            updated_at: string;
                            team_id: string | null;
                            /** @description Dollars spent in the billing period in force now (what GET /users/{user_id}/usage reports as total_cost for current_period) */
                            period_spend_usd: number;
                            /** @description Tokens used in that period */
                            period_tokens: number;
                            /**
                             * Format: date-time
                             * @description Start of the billing period in force now
                             */
                            period_start: string;
                            /**
                             * Format: date-time
                             * @description Exclusive end of that period
                             */
                            period_end: string;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createUser: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description The product's own id; opaque; not "." or ".." */
                    external_user_id: string;
                    name?: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        external_user_id: string;
                        name: string | null;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                        team_id: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        external_user_id: string;
                        name: string | null;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                        team_id: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    setSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: uuid
                     * @description Plan id; plan names are not accepted
                     */
                    plan_id: string;
                    billing_subscription_id?: string | null;
                    period_start?: string | null;
                    period_end?: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        external_user_id: string;
                        name: string | null;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                        team_id: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    setUserTeam: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    team_id: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        external_user_id: string;
                        name: string | null;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                        team_id: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listTeams: {
        parameters: {
            query?: {
                /** @description Only teams whose external_team_id starts with it (exact characters, case-sensitive; no pattern syntax) */
                prefix?: string;
                /** @description next_cursor of the previous page (same prefix) */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        teams: {
                            /** @description external_team_id: the product's own id */
                            team_id: string;
                            /** Format: uuid */
                            service_team_id: string;
                            name: string;
                            plan_name: string | null;
                            billing_subscription_id: string | null;
                            /** @description Current members */
                            member_count: number;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            updated_at: string;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createTeam: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description The product's own id of the team (an organisation, a workspace); opaque, 1-255 characters; not "." or ".." */
                    external_team_id: string;
                    name: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description external_team_id: the product's own id */
                        team_id: string;
                        /** Format: uuid */
                        service_team_id: string;
                        name: string;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /** @description Current members */
                        member_count: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getTeam: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description external_team_id: the product's own id */
                        team_id: string;
                        /** Format: uuid */
                        service_team_id: string;
                        name: string;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /** @description Current members */
                        member_count: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    setTeamSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: uuid
                     * @description Plan id; plan names are not accepted
                     */
                    plan_id: string;
                    billing_subscription_id?: string | null;
                    period_start?: string | null;
                    period_end?: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description external_team_id: the product's own id */
                        team_id: string;
                        /** Format: uuid */
                        service_team_id: string;
                        name: string;
                        plan_name: string | null;
                        billing_subscription_id: string | null;
                        /** @description Current members */
                        member_count: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        updated_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listTeamMembers: {
        parameters: {
            query?: {
                /** @description next_cursor of the previous page */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        team_id: string;
                        members: {
                            /** Format: uuid */
                            id: string;
                            external_user_id: string;
                            name: string | null;
                            plan_name: string | null;
                            billing_subscription_id: string | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            updated_at: string;
                            team_id: string | null;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    ingestUsageEvents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": ({
                    /**
                     * Format: uuid
                     * @description Idempotency key
                     */
                    id: string;
                    /** @description external_user_id; not "." or ".." */
                    user_id: string;
                    session_id?: string | null;
                    /**
                     * Format: date-time
                     * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                     */
                    timestamp: string;
                    model?: string | null;
                    /** @default 0 */
                    input_tokens?: number;
                    /** @default 0 */
                    output_tokens?: number;
                    /** @description Default input_tokens + output_tokens */
                    total_tokens?: number;
                    tool_calls?: string[];
                    /** @default 0 */
                    cost_tokens?: number;
                    /** @default 0 */
                    cost_tools?: number;
                    /** @description Default cost_tokens + cost_tools */
                    cost_total?: number;
                    /** @description Free-form object, at most 16 levels deep; default {} */
                    metadata?: {
                        [key: string]: unknown;
                    };
                    /** @description Client-side flag of the callback form; ignored */
                    synced?: boolean;
                    lease_id?: string | null;
                    /**
                     * @description manual: counted as a manual event wherever events are told apart by source
                     * @default auto
                     */
                    source?: "auto" | "manual";
                    description?: string | null;
                } & {
                    [key: string]: unknown;
                })[];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        accepted: number;
                        duplicates: number;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    ingestGateEvents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": ({
                    /**
                     * Format: uuid
                     * @description Idempotency key
                     */
                    id: string;
                    /** @description external_user_id; not "." or ".." */
                    user_id: string;
                    service_user_id?: string | null;
                    session_id?: string | null;
                    /**
                     * Format: date-time
                     * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                     */
                    timestamp: string;
                    status: "soft_gate" | "hard_gate";
                    /** @description total_spend, session_spend, model_limit:<model>, limit:<name>, or a team plan's prefixed team: (team:total_spend, team:model_limit:<model>, team:limit:<name>) */
                    gate_reason: string;
                    usage_pct: number;
                    current_value: number;
                    limit_value: number;
                    model?: string | null;
                    /** @default false */
                    blocked?: boolean;
                    message?: string | null;
                    /** @description Free-form object, at most 16 levels deep; default {} */
                    metadata?: {
                        [key: string]: unknown;
                    };
                } & {
                    [key: string]: unknown;
                })[];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        accepted: number;
                        duplicates: number;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createManualEvent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Manual event; fields not listed here are ignored */
        requestBody: {
            content: {
                "application/json": {
                    /** @description external_user_id; not "." or ".." */
                    user_id: string;
                    cost?: number | null;
                    model?: string | null;
                    /** @default 0 */
                    input_tokens?: number;
                    /** @default 0 */
                    output_tokens?: number;
                    description?: string | null;
                    tool_calls?: string[];
                    /** @description Free-form object, at most 16 levels deep; default {} */
                    metadata?: {
                        [key: string]: unknown;
                    };
                    session_id?: string | null;
                    idempotency_key?: string | null;
                } & {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description evt_ followed by a UUID */
                        id: string;
                        user_id: string;
                        cost: number;
                        model: string | null;
                        source: "manual" | "auto";
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        /** Format: uuid */
                        service_user_id: string;
                        /** @description Plan name; "none" for a user without a plan */
                        plan: string;
                        plan_id: string | null;
                        /** @description True when a plan is in force (the user's own or its team's) and the client must enforce plan_config and limits; false: no plan, permissive defaults */
                        sdk_enabled: boolean;
                        plan_config: {
                            /** @description Omitted: unlimited */
                            max_spend_per_period?: number;
                            /** @description Omitted: unlimited */
                            max_spend_per_session?: number;
                            soft_gate_at: number;
                            hard_gate_at: number;
                            model_limits: {
                                [key: string]: {
                                    max_tokens_per_period: number;
                                };
                            };
                            cost_rates: {
                                [key: string]: {
                                    input: number;
                                    output: number;
                                };
                            };
                            session_timeout_minutes: number;
                            /** @description Omitted: models without a cost rate cost nothing */
                            default_cost_rate?: {
                                input: number;
                                output: number;
                            };
                            tool_costs: {
                                [key: string]: number;
                            };
                            default_tool_cost: number;
                            pre_call_estimate: boolean;
                            pre_call_buffer_tokens: number;
                            /** @description The plan's windows and rate limits; empty without */
                            limits: {
                                name: string;
                                /** @enum {string} */
                                metric: "spend" | "tokens" | "requests";
                                max: number;
                                /** @enum {string} */
                                window: "minute" | "hour" | "day" | "week" | "month" | "period" | "rolling";
                                duration_minutes: number | null;
                                model: string | null;
                                soft_gate_at: number | null;
                                hard_gate_at: number | null;
                                /**
                                 * @description On a team's plan: team (the members' sum) or member (each member's own); team when not given
                                 * @enum {string}
                                 */
                                scope: "team" | "member";
                            }[];
                            /** @description IANA time zone of the calendar windows */
                            time_zone: string;
                            /** @description Prepaid credits extend the period spend cap */
                            credits_enabled: boolean;
                            /** @description Dollars; omitted: credits.low never fires */
                            credits_low_at?: number;
                        };
                        current_usage: {
                            period_cost: number;
                            period_tokens_total: number;
                            period_tokens_by_model: {
                                [key: string]: number;
                            };
                            period_cost_by_model: {
                                [key: string]: number;
                            };
                        };
                        billing_period: {
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            start: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            end: string;
                        };
                        /** @description Every dimension of the user with its usage now (as GET /users/{user_id}/limits), its team's last */
                        limits: {
                            /** @description total_spend, session_spend, model_limit:<model> or limit:<name>; a team plan's prefixed team: (team:total_spend, team:limit:<name>): the gate_reason when it blocks */
                            reason: string;
                            name: string | null;
                            /** @description spend, tokens or requests */
                            metric: string;
                            /** @description minute, hour, day, week, month, period, rolling or session */
                            window: string;
                            duration_minutes: number | null;
                            model: string | null;
                            /** @description user (the user's own plan), team (a team plan's, over the team's sums) or member (a team plan's limit counted for this member alone) */
                            scope: string;
                            /** @description Dollars for spend */
                            max: number;
                            /** @description Dollars for spend; 0 for session_spend (the client counts its own sessions) */
                            used: number;
                            /** @description used / max rounded to 1e-6; 1 when max is 0 */
                            pct: number;
                            /** @description The limit's own, else the plan's */
                            soft_gate_at: number;
                            /** @description The limit's own, else the plan's */
                            hard_gate_at: number;
                            window_start: string | null;
                            resets_at: string | null;
                            buckets: {
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                start: string;
                                /** @description Dollars for spend */
                                used: number;
                            }[] | null;
                            /** @description total_spend with credits enabled and an allowance: the balance counted into max */
                            credits?: {
                                /** @description Dollars; negative with an overdraft */
                                balance: number;
                                low_at: number | null;
                            };
                        }[];
                        credits: {
                            /** @description Dollars; negative with an overdraft */
                            balance: number;
                            /** @description Dollars of grants not yet effective */
                            pending: number;
                            low_at: number | null;
                            /** @description Active grants that expire, soonest first */
                            expiries: {
                                grant_id: string;
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                at: string;
                                /** @description Dollars that expire then */
                                remaining: number;
                            }[];
                        } | null;
                        team: {
                            /** @description The external team id */
                            team_id: string;
                            /** Format: uuid */
                            service_team_id: string;
                            plan: string;
                            plan_id: string;
                            plan_config: {
                                /** @description Omitted: unlimited */
                                max_spend_per_period?: number;
                                /** @description Omitted: unlimited */
                                max_spend_per_session?: number;
                                soft_gate_at: number;
                                hard_gate_at: number;
                                model_limits: {
                                    [key: string]: {
                                        max_tokens_per_period: number;
                                    };
                                };
                                cost_rates: {
                                    [key: string]: {
                                        input: number;
                                        output: number;
                                    };
                                };
                                session_timeout_minutes: number;
                                /** @description Omitted: models without a cost rate cost nothing */
                                default_cost_rate?: {
                                    input: number;
                                    output: number;
                                };
                                tool_costs: {
                                    [key: string]: number;
                                };
                                default_tool_cost: number;
                                pre_call_estimate: boolean;
                                pre_call_buffer_tokens: number;
                                /** @description The plan's windows and rate limits; empty without */
                                limits: {
                                    name: string;
                                    /** @enum {string} */
                                    metric: "spend" | "tokens" | "requests";
                                    max: number;
                                    /** @enum {string} */
                                    window: "minute" | "hour" | "day" | "week" | "month" | "period" | "rolling";
                                    duration_minutes: number | null;
                                    model: string | null;
                                    soft_gate_at: number | null;
                                    hard_gate_at: number | null;
                                    /**
                                     * @description On a team's plan: team (the members' sum) or member (each member's own); team when not given
                                     * @enum {string}
                                     */
                                    scope: "team" | "member";
                                }[];
                                /** @description IANA time zone of the calendar windows */
                                time_zone: string;
                                /** @description Prepaid credits extend the period spend cap */
                                credits_enabled: boolean;
                                /** @description Dollars; omitted: credits.low never fires */
                                credits_low_at?: number;
                            };
                            /** @description The team's sums over its members in its billing period */
                            current_usage: {
                                period_cost: number;
                                period_tokens_total: number;
                                period_tokens_by_model: {
                                    [key: string]: number;
                                };
                                period_cost_by_model: {
                                    [key: string]: number;
                                };
                            };
                            /** @description The team's */
                            billing_period: {
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                start: string;
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                end: string;
                            };
                            credits: {
                                /** @description Dollars; negative with an overdraft */
                                balance: number;
                                /** @description Dollars of grants not yet effective */
                                pending: number;
                                low_at: number | null;
                                /** @description Active grants that expire, soonest first */
                                expiries: {
                                    grant_id: string;
                                    /**
                                     * Format: date-time
                                     * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                     */
                                    at: string;
                                    /** @description Dollars that expire then */
                                    remaining: number;
                                }[];
                            } | null;
                        } | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getUsage: {
        parameters: {
            query?: {
                /** @description current_period, current_month or YYYY-MM */
                period?: string;
                breakdown?: "model";
            };
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        period: string;
                        total_cost: number;
                        total_tokens: number;
                        tokens_by_model: {
                            [key: string]: number;
                        };
                        cost_by_model: {
                            [key: string]: number;
                        };
                        tool_calls_count: number;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getTeamUsage: {
        parameters: {
            query?: {
                /** @description current_period, current_month or YYYY-MM */
                period?: string;
                breakdown?: "model";
            };
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        team_id: string;
                        period: string;
                        /** @description Dollars: the sum over the team's members */
                        total_cost: number;
                        total_tokens: number;
                        tokens_by_model: {
                            [key: string]: number;
                        };
                        cost_by_model: {
                            [key: string]: number;
                        };
                        tool_calls_count: number;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listGateEvents: {
        parameters: {
            query?: {
                status?: "soft_gate" | "hard_gate";
                gate_reason?: string;
                blocked_only?: boolean;
                /** @description Inclusive lower bound */
                since?: string;
                /** @description Exclusive upper bound */
                until?: string;
                /** @description next_cursor of the previous page */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        events: {
                            id: string;
                            user_id: string;
                            service_user_id: string | null;
                            session_id: string | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            timestamp: string;
                            /** @description soft_gate or hard_gate */
                            status: string;
                            gate_reason: string;
                            usage_pct: number;
                            current_value: number;
                            limit_value: number;
                            model: string | null;
                            blocked: boolean;
                            message: string | null;
                            /** @description As sent; the client library adds suppressed_events, the gates of this kind it did not write since its previous event */
                            metadata: {
                                [key: string]: unknown;
                            };
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getUserLimits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        limits: {
                            /** @description total_spend, session_spend, model_limit:<model> or limit:<name>; a team plan's prefixed team: (team:total_spend, team:limit:<name>): the gate_reason when it blocks */
                            reason: string;
                            name: string | null;
                            /** @description spend, tokens or requests */
                            metric: string;
                            /** @description minute, hour, day, week, month, period, rolling or session */
                            window: string;
                            duration_minutes: number | null;
                            model: string | null;
                            /** @description user (the user's own plan), team (a team plan's, over the team's sums) or member (a team plan's limit counted for this member alone) */
                            scope: string;
                            /** @description Dollars for spend */
                            max: number;
                            /** @description Dollars for spend; 0 for session_spend (the client counts its own sessions) */
                            used: number;
                            /** @description used / max rounded to 1e-6; 1 when max is 0 */
                            pct: number;
                            /** @description The limit's own, else the plan's */
                            soft_gate_at: number;
                            /** @description The limit's own, else the plan's */
                            hard_gate_at: number;
                            window_start: string | null;
                            resets_at: string | null;
                            buckets: {
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                start: string;
                                /** @description Dollars for spend */
                                used: number;
                            }[] | null;
                            /** @description total_spend with credits enabled and an allowance: the balance counted into max */
                            credits?: {
                                /** @description Dollars; negative with an overdraft */
                                balance: number;
                                low_at: number | null;
                            };
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getTeamLimits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        team_id: string;
                        limits: {
                            /** @description total_spend, session_spend, model_limit:<model> or limit:<name>; a team plan's prefixed team: (team:total_spend, team:limit:<name>): the gate_reason when it blocks */
                            reason: string;
                            name: string | null;
                            /** @description spend, tokens or requests */
                            metric: string;
                            /** @description minute, hour, day, week, month, period, rolling or session */
                            window: string;
                            duration_minutes: number | null;
                            model: string | null;
                            /** @description user (the user's own plan), team (a team plan's, over the team's sums) or member (a team plan's limit counted for this member alone) */
                            scope: string;
                            /** @description Dollars for spend */
                            max: number;
                            /** @description Dollars for spend; 0 for session_spend (the client counts its own sessions) */
                            used: number;
                            /** @description used / max rounded to 1e-6; 1 when max is 0 */
                            pct: number;
                            /** @description The limit's own, else the plan's */
                            soft_gate_at: number;
                            /** @description The limit's own, else the plan's */
                            hard_gate_at: number;
                            window_start: string | null;
                            resets_at: string | null;
                            buckets: {
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                start: string;
                                /** @description Dollars for spend */
                                used: number;
                            }[] | null;
                            /** @description total_spend with credits enabled and an allowance: the balance counted into max */
                            credits?: {
                                /** @description Dollars; negative with an overdraft */
                                balance: number;
                                low_at: number | null;
                            };
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    acquireLease: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Id of the asking client replica; also the lease id (one lease per holder and period) */
                    holder: string;
                    /** @description Dollars the holder's next call needs; a smaller grant is no grant */
                    need: number;
                    /** @description Most dollars the holder wants to hold (at least need) */
                    want: number;
                    /** @description Lease lifetime; 0 or absent: the service default (60 s) */
                    ttl_ms?: number;
                    /** @description Model of the holder's next call: when the plan caps its tokens, the lease also holds a slice of that cap */
                    model?: string;
                    /** @description Tokens of `model` the next call needs (its pre-call estimate); default 0 */
                    need_tokens?: number;
                    /** @description Most tokens of `model` the holder wants to hold (at least need_tokens); default need_tokens */
                    want_tokens?: number;
                    /** @description Slices of the windows of the plan's `limits` the holder's calls count in: a calendar or period window by a time in it (`window_start`, absent: now), a rolling window by its dimension alone */
                    windows?: {
                        /** @description The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>` */
                        dimension: string;
                        window_start?: string | null;
                        /** @description What the holder's next call needs of the window, in the limit's unit (dollars for spend, else tokens or requests); a smaller grant is no grant */
                        need: number;
                        /** @description Most the holder wants to hold of the window (at least need) */
                        want: number;
                    }[];
                    /** @description Dollars of the holder's unused slice it will not spend before this answer comes: when the lease holds more than an equal share of the cap's unsettled part among the holders and one more, the excess goes back, at most this much (`returned`), and nothing is granted; else `need` and `want` are granted as without it. Default 0 */
                    spare?: number;
                    /** @description The same in tokens of `model`'s cap (`tokens.returned`). Default 0 */
                    spare_tokens?: number;
                    /** @description A slice of the period spend cap of the user's team (its plan in force now), kept in the team's counter: one slice per holder and team period, shared by every member the holder serves */
                    team?: {
                        /** @description Dollars of the team's period spend cap the holder's next call needs; a smaller grant is no grant */
                        need: number;
                        /** @description Most dollars of the team's cap the holder wants to hold (at least need) */
                        want: number;
                        /** @description Slices of the windows of the team plan's team-scope limits, as `windows` for the user's plan: one slice per holder, shared by every member it serves */
                        windows?: {
                            /** @description The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>` */
                            dimension: string;
                            window_start?: string | null;
                            /** @description What the holder's next call needs of the window, in the limit's unit (dollars for spend, else tokens or requests); a smaller grant is no grant */
                            need: number;
                            /** @description Most the holder wants to hold of the window (at least need) */
                            want: number;
                        }[];
                        /** @description Model of the holder's next call: when the team plan caps its tokens, the lease also holds a slice of the team's cap */
                        model?: string;
                        /** @description Tokens of `model` of the team's cap the next call needs; default 0 */
                        need_tokens?: number;
                        /** @description Most tokens of `model` of the team's cap the holder wants to hold (at least need_tokens); default need_tokens */
                        want_tokens?: number;
                        /** @description Dollars of the holder's unused slice of the team's cap it will not spend before this answer comes, as `spare` for the user's cap: when the slice holds more than an equal share of the team cap's unsettled part among its holders and one more, the excess goes back, at most this much (`team.returned`), and nothing is granted. Default 0 */
                        spare?: number;
                        /** @description The same in tokens of `model`'s team cap (`team.tokens.returned`). Default 0 */
                        spare_tokens?: number;
                    };
                    /** @description Slices of the windows of the member-scope limits of the user's team plan (the user's own seat windows), as `windows` for the user's plan */
                    member_windows?: {
                        /** @description The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>` */
                        dimension: string;
                        window_start?: string | null;
                        /** @description What the holder's next call needs of the window, in the limit's unit (dollars for spend, else tokens or requests); a smaller grant is no grant */
                        need: number;
                        /** @description Most the holder wants to hold of the window (at least need) */
                        want: number;
                    }[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description False when nothing asked for is capped (the user's period caps and windows, and with `team` the period spend of the user's team): nothing to lease, no lease needed */
                        limited: boolean;
                        lease: {
                            /** @description Send it as lease_id on the usage events spent from the lease */
                            lease_id: string;
                            /** @description Dollars granted to this holder in the period in all */
                            granted: number;
                            /** @description Dollars granted by this request; 0 when refused (the cap is reached for this holder) */
                            added: number;
                            /** @description Dollars taken back by this request (of `spare`); `granted` is what the lease holds after it */
                            returned: number;
                            /** @description Dollars of usage events settled against the lease */
                            spent: number;
                            expires_at: string | null;
                            ttl_ms: number;
                            /** @description Dollars of the cap neither settled nor held by a lease after this request */
                            remaining: number;
                            /** @description Holders with an outstanding slice */
                            holders: number;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            period_end: string;
                            /** @description False when the user has no finite period spend cap: the dollar fields mean nothing */
                            spend_limited: boolean;
                            tokens: {
                                /** @description Normalized model name */
                                model: string;
                                /** @description Tokens granted to this holder in the period in all */
                                granted: number;
                                /** @description Tokens granted by this request; 0 when refused */
                                added: number;
                                /** @description Tokens taken back by this request (of `spare_tokens`) */
                                returned: number;
                                /** @description Tokens of usage events settled against the lease */
                                spent: number;
                                /** @description Tokens of the model's cap neither settled nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding token slice of the model */
                                holders: number;
                            } | null;
                            /** @description One per window asked for, in the order asked (empty when none was) */
                            windows: {
                                /** @description The dimension key asked for */
                                dimension: string;
                                /** @description False when the plan in force has no limit of this dimension: nothing leased, no slice needed */
                                limited: boolean;
                                window_start: string | null;
                                window_end: string | null;
                                /** @description Granted to this holder in the window in all, in the limit's unit (dollars for spend) */
                                granted: number;
                                /** @description Granted by this request; 0 when refused */
                                added: number;
                                /** @description Usage settled against the slice */
                                spent: number;
                                /** @description Of the window's hard mark, neither counted nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding slice of the window */
                                holders: number;
                            }[];
                            /** @description The team slice, when `team` was asked (or `team_used` given) and the user is in a team with a plan in force */
                            team: {
                                /** @description The user's team (external id) */
                                team_id: string;
                                /** @description False when the team plan has no period spend cap: nothing leased, no slice needed */
                                spend_limited: boolean;
                                /** @description Dollars of the team's cap granted to this holder in the team's period in all */
                                granted: number;
                                /** @description Dollars granted by this request; 0 when refused */
                                added: number;
                                /** @description Dollars of usage events settled against the team slice */
                                spent: number;
                                /** @description Dollars of the team's cap neither settled nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding slice of the team's cap */
                                holders: number;
                                /** @description Dollars taken back from the team slice by this request (of `team.spare`); `granted` is what the slice holds after it */
                                returned: number;
                                expires_at: string | null;
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                period_end: string;
                                /** @description One per team window asked for (`team.windows`), in the order asked */
                                windows: {
                                    /** @description The dimension key asked for */
                                    dimension: string;
                                    /** @description False when the plan in force has no limit of this dimension: nothing leased, no slice needed */
                                    limited: boolean;
                                    window_start: string | null;
                                    window_end: string | null;
                                    /** @description Granted to this holder in the window in all, in the limit's unit (dollars for spend) */
                                    granted: number;
                                    /** @description Granted by this request; 0 when refused */
                                    added: number;
                                    /** @description Usage settled against the slice */
                                    spent: number;
                                    /** @description Of the window's hard mark, neither counted nor held by a lease after this request */
                                    remaining: number;
                                    /** @description Holders with an outstanding slice of the window */
                                    holders: number;
                                }[];
                                tokens: {
                                    /** @description Normalized model name */
                                    model: string;
                                    /** @description Tokens granted to this holder in the period in all */
                                    granted: number;
                                    /** @description Tokens granted by this request; 0 when refused */
                                    added: number;
                                    /** @description Tokens taken back by this request (of `spare_tokens`) */
                                    returned: number;
                                    /** @description Tokens of usage events settled against the lease */
                                    spent: number;
                                    /** @description Tokens of the model's cap neither settled nor held by a lease after this request */
                                    remaining: number;
                                    /** @description Holders with an outstanding token slice of the model */
                                    holders: number;
                                } | null;
                            } | null;
                            /** @description One per member-scope window asked for (`member_windows`), in the order asked */
                            member_windows: {
                                /** @description The dimension key asked for */
                                dimension: string;
                                /** @description False when the plan in force has no limit of this dimension: nothing leased, no slice needed */
                                limited: boolean;
                                window_start: string | null;
                                window_end: string | null;
                                /** @description Granted to this holder in the window in all, in the limit's unit (dollars for spend) */
                                granted: number;
                                /** @description Granted by this request; 0 when refused */
                                added: number;
                                /** @description Usage settled against the slice */
                                spent: number;
                                /** @description Of the window's hard mark, neither counted nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding slice of the window */
                                holders: number;
                            }[];
                        } | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description A backend service is unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    releaseLease: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
                /** @description 1-64 letters, digits, _ or - */
                lease_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Dollars the holder spent from the lease in all, settled or not yet */
                    used: number;
                    /** @description The same in tokens per model; a model left out keeps its token slice until the lease lapses */
                    used_tokens?: {
                        [key: string]: number;
                    };
                    /** @description The same per window slice; a window left out keeps its slice until the lease lapses or the window ends */
                    used_windows?: {
                        /** @description The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>` */
                        dimension: string;
                        window_start?: string | null;
                        /** @description What the holder used of the window's slice in all, settled or not yet */
                        used: number;
                    }[];
                    /** @description Dollars the holder spent from its slice of the user's team's cap in all (every member it serves); absent: the team slice is kept until it lapses */
                    team_used?: number;
                    /** @description The same per slice of the team's windows; a window left out keeps its slice until the lease lapses or the window ends */
                    team_used_windows?: {
                        /** @description The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>` */
                        dimension: string;
                        window_start?: string | null;
                        /** @description What the holder used of the window's slice in all, settled or not yet */
                        used: number;
                    }[];
                    /** @description The same per model of the team's token caps; a model left out keeps its team token slice until the lease lapses */
                    team_used_tokens?: {
                        [key: string]: number;
                    };
                    /** @description The same per slice of the member-scope windows of the user's team plan */
                    used_member_windows?: {
                        /** @description The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>` */
                        dimension: string;
                        window_start?: string | null;
                        /** @description What the holder used of the window's slice in all, settled or not yet */
                        used: number;
                    }[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        lease: {
                            /** @description Send it as lease_id on the usage events spent from the lease */
                            lease_id: string;
                            /** @description Dollars granted to this holder in the period in all */
                            granted: number;
                            /** @description Dollars granted by this request; 0 when refused (the cap is reached for this holder) */
                            added: number;
                            /** @description Dollars taken back by this request (of `spare`); `granted` is what the lease holds after it */
                            returned: number;
                            /** @description Dollars of usage events settled against the lease */
                            spent: number;
                            expires_at: string | null;
                            ttl_ms: number;
                            /** @description Dollars of the cap neither settled nor held by a lease after this request */
                            remaining: number;
                            /** @description Holders with an outstanding slice */
                            holders: number;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            period_end: string;
                            /** @description False when the user has no finite period spend cap: the dollar fields mean nothing */
                            spend_limited: boolean;
                            tokens: {
                                /** @description Normalized model name */
                                model: string;
                                /** @description Tokens granted to this holder in the period in all */
                                granted: number;
                                /** @description Tokens granted by this request; 0 when refused */
                                added: number;
                                /** @description Tokens taken back by this request (of `spare_tokens`) */
                                returned: number;
                                /** @description Tokens of usage events settled against the lease */
                                spent: number;
                                /** @description Tokens of the model's cap neither settled nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding token slice of the model */
                                holders: number;
                            } | null;
                            /** @description One per window asked for, in the order asked (empty when none was) */
                            windows: {
                                /** @description The dimension key asked for */
                                dimension: string;
                                /** @description False when the plan in force has no limit of this dimension: nothing leased, no slice needed */
                                limited: boolean;
                                window_start: string | null;
                                window_end: string | null;
                                /** @description Granted to this holder in the window in all, in the limit's unit (dollars for spend) */
                                granted: number;
                                /** @description Granted by this request; 0 when refused */
                                added: number;
                                /** @description Usage settled against the slice */
                                spent: number;
                                /** @description Of the window's hard mark, neither counted nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding slice of the window */
                                holders: number;
                            }[];
                            /** @description The team slice, when `team` was asked (or `team_used` given) and the user is in a team with a plan in force */
                            team: {
                                /** @description The user's team (external id) */
                                team_id: string;
                                /** @description False when the team plan has no period spend cap: nothing leased, no slice needed */
                                spend_limited: boolean;
                                /** @description Dollars of the team's cap granted to this holder in the team's period in all */
                                granted: number;
                                /** @description Dollars granted by this request; 0 when refused */
                                added: number;
                                /** @description Dollars of usage events settled against the team slice */
                                spent: number;
                                /** @description Dollars of the team's cap neither settled nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding slice of the team's cap */
                                holders: number;
                                /** @description Dollars taken back from the team slice by this request (of `team.spare`); `granted` is what the slice holds after it */
                                returned: number;
                                expires_at: string | null;
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                period_end: string;
                                /** @description One per team window asked for (`team.windows`), in the order asked */
                                windows: {
                                    /** @description The dimension key asked for */
                                    dimension: string;
                                    /** @description False when the plan in force has no limit of this dimension: nothing leased, no slice needed */
                                    limited: boolean;
                                    window_start: string | null;
                                    window_end: string | null;
                                    /** @description Granted to this holder in the window in all, in the limit's unit (dollars for spend) */
                                    granted: number;
                                    /** @description Granted by this request; 0 when refused */
                                    added: number;
                                    /** @description Usage settled against the slice */
                                    spent: number;
                                    /** @description Of the window's hard mark, neither counted nor held by a lease after this request */
                                    remaining: number;
                                    /** @description Holders with an outstanding slice of the window */
                                    holders: number;
                                }[];
                                tokens: {
                                    /** @description Normalized model name */
                                    model: string;
                                    /** @description Tokens granted to this holder in the period in all */
                                    granted: number;
                                    /** @description Tokens granted by this request; 0 when refused */
                                    added: number;
                                    /** @description Tokens taken back by this request (of `spare_tokens`) */
                                    returned: number;
                                    /** @description Tokens of usage events settled against the lease */
                                    spent: number;
                                    /** @description Tokens of the model's cap neither settled nor held by a lease after this request */
                                    remaining: number;
                                    /** @description Holders with an outstanding token slice of the model */
                                    holders: number;
                                } | null;
                            } | null;
                            /** @description One per member-scope window asked for (`member_windows`), in the order asked */
                            member_windows: {
                                /** @description The dimension key asked for */
                                dimension: string;
                                /** @description False when the plan in force has no limit of this dimension: nothing leased, no slice needed */
                                limited: boolean;
                                window_start: string | null;
                                window_end: string | null;
                                /** @description Granted to this holder in the window in all, in the limit's unit (dollars for spend) */
                                granted: number;
                                /** @description Granted by this request; 0 when refused */
                                added: number;
                                /** @description Usage settled against the slice */
                                spent: number;
                                /** @description Of the window's hard mark, neither counted nor held by a lease after this request */
                                remaining: number;
                                /** @description Holders with an outstanding slice of the window */
                                holders: number;
                            }[];
                        };
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getCredits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        /** @description Dollars: active grants' remaining less the overdraft (negative with an overdraft) */
                        balance: number;
                        /** @description Dollars of grants not yet effective */
                        pending: number;
                        /** @description Dollars spent beyond the balance, paid first by the next grant */
                        overdraft: number;
                        low_at: number | null;
                        /** @description Newest first (the newest 1,000) */
                        grants: {
                            id: string;
                            /** @description Dollars granted */
                            amount: number;
                            /** @description Dollars left (0 once depleted, expired or voided) */
                            remaining: number;
                            kind: "paid" | "promotional";
                            priority: number;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            effective_at: string;
                            expires_at: string | null;
                            /** @enum {string} */
                            status: "pending" | "active" | "depleted" | "expired" | "voided";
                            description: string | null;
                            metadata: {
                                [key: string]: unknown;
                            } | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createCreditGrant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        /** @description A grant of prepaid credits */
        requestBody: {
            content: {
                "application/json": {
                    /** @description The caller's id of the grant (e.g. the payment's id), 1-128 printable characters, no white space at either end; sending it again is a no-op */
                    id: string;
                    /** @description Dollars, from 0.000000001 (a nano-dollar; 400 below) to 10^6; an owner's live grants hold at most $2,000,000 in all (409 past it) */
                    amount: number;
                    /** @description For reporting; draw order is by priority. Default paid */
                    kind?: "paid" | "promotional";
                    /** @description Lower is drawn first. Default 50 */
                    priority?: number;
                    effective_at?: string | null;
                    expires_at?: string | null;
                    description?: string | null;
                    metadata?: {
                        [key: string]: unknown;
                    } | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @description Dollars granted */
                        amount: number;
                        /** @description Dollars left (0 once depleted, expired or voided) */
                        remaining: number;
                        kind: "paid" | "promotional";
                        priority: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        effective_at: string;
                        expires_at: string | null;
                        /** @enum {string} */
                        status: "pending" | "active" | "depleted" | "expired" | "voided";
                        description: string | null;
                        metadata: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @description Dollars granted */
                        amount: number;
                        /** @description Dollars left (0 once depleted, expired or voided) */
                        remaining: number;
                        kind: "paid" | "promotional";
                        priority: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        effective_at: string;
                        expires_at: string | null;
                        /** @enum {string} */
                        status: "pending" | "active" | "depleted" | "expired" | "voided";
                        description: string | null;
                        metadata: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    voidCreditGrant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
                /** @description The grant's id as it was granted */
                grant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @description Dollars granted */
                        amount: number;
                        /** @description Dollars left (0 once depleted, expired or voided) */
                        remaining: number;
                        kind: "paid" | "promotional";
                        priority: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        effective_at: string;
                        expires_at: string | null;
                        /** @enum {string} */
                        status: "pending" | "active" | "depleted" | "expired" | "voided";
                        description: string | null;
                        metadata: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listCreditLedger: {
        parameters: {
            query?: {
                limit?: number;
                /** @description next_cursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        entries: {
                            /**
                             * Format: date-time
                             * @description The hour for usage and overdraft entries (summed per grant and hour), the moment otherwise
                             */
                            at: string;
                            /** @enum {string} */
                            type: "grant" | "usage" | "expiry" | "void" | "overdraft";
                            /** @description Dollars, signed: usage, overdraft, expiry and void are negative */
                            amount: number;
                            grant_id: string | null;
                            /** @description The balance after the entry (the last change of the hour for summed entries) */
                            balance_after: number;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getTeamCredits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        team_id: string;
                        /** @description Dollars: active grants' remaining less the overdraft (negative with an overdraft) */
                        balance: number;
                        /** @description Dollars of grants not yet effective */
                        pending: number;
                        /** @description Dollars spent beyond the balance, paid first by the next grant */
                        overdraft: number;
                        low_at: number | null;
                        /** @description Newest first (the newest 1,000) */
                        grants: {
                            id: string;
                            /** @description Dollars granted */
                            amount: number;
                            /** @description Dollars left (0 once depleted, expired or voided) */
                            remaining: number;
                            kind: "paid" | "promotional";
                            priority: number;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            effective_at: string;
                            expires_at: string | null;
                            /** @enum {string} */
                            status: "pending" | "active" | "depleted" | "expired" | "voided";
                            description: string | null;
                            metadata: {
                                [key: string]: unknown;
                            } | null;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createTeamCreditGrant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        /** @description A grant of prepaid credits */
        requestBody: {
            content: {
                "application/json": {
                    /** @description The caller's id of the grant (e.g. the payment's id), 1-128 printable characters, no white space at either end; sending it again is a no-op */
                    id: string;
                    /** @description Dollars, from 0.000000001 (a nano-dollar; 400 below) to 10^6; an owner's live grants hold at most $2,000,000 in all (409 past it) */
                    amount: number;
                    /** @description For reporting; draw order is by priority. Default paid */
                    kind?: "paid" | "promotional";
                    /** @description Lower is drawn first. Default 50 */
                    priority?: number;
                    effective_at?: string | null;
                    expires_at?: string | null;
                    description?: string | null;
                    metadata?: {
                        [key: string]: unknown;
                    } | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @description Dollars granted */
                        amount: number;
                        /** @description Dollars left (0 once depleted, expired or voided) */
                        remaining: number;
                        kind: "paid" | "promotional";
                        priority: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        effective_at: string;
                        expires_at: string | null;
                        /** @enum {string} */
                        status: "pending" | "active" | "depleted" | "expired" | "voided";
                        description: string | null;
                        metadata: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @description Dollars granted */
                        amount: number;
                        /** @description Dollars left (0 once depleted, expired or voided) */
                        remaining: number;
                        kind: "paid" | "promotional";
                        priority: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        effective_at: string;
                        expires_at: string | null;
                        /** @enum {string} */
                        status: "pending" | "active" | "depleted" | "expired" | "voided";
                        description: string | null;
                        metadata: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    voidTeamCreditGrant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
                /** @description The grant's id as it was granted */
                grant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @description Dollars granted */
                        amount: number;
                        /** @description Dollars left (0 once depleted, expired or voided) */
                        remaining: number;
                        kind: "paid" | "promotional";
                        priority: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        effective_at: string;
                        expires_at: string | null;
                        /** @enum {string} */
                        status: "pending" | "active" | "depleted" | "expired" | "voided";
                        description: string | null;
                        metadata: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listTeamCreditLedger: {
        parameters: {
            query?: {
                limit?: number;
                /** @description next_cursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path: {
                /** @description external_team_id (1-255 characters), URL-encoded; not "." or ".." */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        team_id: string;
                        entries: {
                            /**
                             * Format: date-time
                             * @description The hour for usage and overdraft entries (summed per grant and hour), the moment otherwise
                             */
                            at: string;
                            /** @enum {string} */
                            type: "grant" | "usage" | "expiry" | "void" | "overdraft";
                            /** @description Dollars, signed: usage, overdraft, expiry and void are negative */
                            amount: number;
                            grant_id: string | null;
                            /** @description The balance after the entry (the last change of the hour for summed entries) */
                            balance_after: number;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listWebhookEndpoints: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        url: string;
                        subscribed_events: ("gate_event.soft_gate" | "gate_event.hard_gate" | "gate_event.blocked" | "usage.threshold.50" | "usage.threshold.80" | "usage.threshold.100" | "usage.summary.daily" | "usage.summary.weekly" | "usage.summary.monthly" | "credits.low" | "credits.depleted" | "credits.expired")[];
                        description: string | null;
                        enabled: boolean;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    }[];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description https URL of a publicly reachable receiver */
                    url: string;
                    /** @description Event types to receive, at least one of: gate_event.soft_gate, gate_event.hard_gate, gate_event.blocked, usage.threshold.50, usage.threshold.80, usage.threshold.100, usage.summary.daily, usage.summary.weekly, usage.summary.monthly, credits.low, credits.depleted, credits.expired */
                    subscribed_events: string[];
                    description?: string | null;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        url: string;
                        subscribed_events: ("gate_event.soft_gate" | "gate_event.hard_gate" | "gate_event.blocked" | "usage.threshold.50" | "usage.threshold.80" | "usage.threshold.100" | "usage.summary.daily" | "usage.summary.weekly" | "usage.summary.monthly" | "credits.low" | "credits.depleted" | "credits.expired")[];
                        description: string | null;
                        enabled: boolean;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                        /** @description Signing secret (whsec_...) */
                        secret: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Conflicts with the current state (already exists, a limit reached, the last admin key) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getWebhookEndpointSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id; anything unknown is not found */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Signing secret (whsec_...) */
                        secret: string;
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    deleteWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id; anything unknown is not found */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Removed */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    updateWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id; anything unknown is not found */
                id: string;
            };
            cookie?: never;
        };
        /** @description Any subset of the fields; only those sent change (description null clears it) */
        requestBody: {
            content: {
                "application/json": {
                    /** @description https URL of a publicly reachable receiver */
                    url?: string;
                    /** @description Event types to receive, at least one of: gate_event.soft_gate, gate_event.hard_gate, gate_event.blocked, usage.threshold.50, usage.threshold.80, usage.threshold.100, usage.summary.daily, usage.summary.weekly, usage.summary.monthly, credits.low, credits.depleted, credits.expired */
                    subscribed_events?: string[];
                    description?: string | null;
                    enabled?: boolean;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        url: string;
                        subscribed_events: ("gate_event.soft_gate" | "gate_event.hard_gate" | "gate_event.blocked" | "usage.threshold.50" | "usage.threshold.80" | "usage.threshold.100" | "usage.summary.daily" | "usage.summary.weekly" | "usage.summary.monthly" | "credits.low" | "credits.depleted" | "credits.expired")[];
                        description: string | null;
                        enabled: boolean;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        created_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    rotateWebhookEndpointSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id; anything unknown is not found */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Signing secret (whsec_...) */
                        secret: string;
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    testWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id; anything unknown is not found */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        success: boolean;
                        status_code: number;
                        response_time_ms: number;
                        error: string | null;
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
                status?: "success" | "failed" | "pending";
            };
            header?: never;
            path: {
                /** @description Endpoint id; anything unknown is not found */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        deliveries: {
                            /** @description whdel_ + UUID */
                            id: string;
                            event_type: string;
                            status: "success" | "failed" | "pending";
                            /** @description Status of the last answer; 0 before the first attempt or when there was no answer */
                            status_code: number;
                            /** @description Attempts made so far (at most 6) */
                            attempt: number;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            created_at: string;
                            completed_at: string | null;
                            /** @description The envelope's id (whevt_ + UUID): what the receiver got as X-Service-Delivery and as the body's id */
                            event_id: string;
                            last_error: string | null;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsSummary: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description Count only events of this source (manual events or instrumented calls); both when absent */
                source?: "manual" | "auto";
                /** @description Only usage (and gates) attributed to this team (external_team_id): each event counts for the team its user was a member of at the event's time, so a member moved later leaves its past with the old team; events counted before teams were recorded belong to no team. 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        total_cost: number;
                        total_tokens: number;
                        total_events: number;
                        /** @description Distinct users with at least one usage event in the window */
                        active_users: number;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        period_start: string;
                        /**
                         * Format: date-time
                         * @description Exclusive end: 00:00 UTC of tomorrow
                         */
                        period_end: string;
                        /** @description The same number of days immediately before period_start */
                        previous_period: {
                            total_cost: number;
                            total_tokens: number;
                            total_events: number;
                            /** @description Distinct users with at least one usage event in the window */
                            active_users: number;
                        };
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsTimeseries: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description Count only events of this source (manual events or instrumented calls); both when absent */
                source?: "manual" | "auto";
                /** @description Only usage (and gates) attributed to this team (external_team_id): each event counts for the team its user was a member of at the event's time, so a member moved later leaves its past with the old team; events counted before teams were recorded belong to no team. 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description One row per UTC day of the window, oldest first, days without events as zeros */
                        data: {
                            /** Format: date */
                            date: string;
                            cost: number;
                            tokens: number;
                            events: number;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsGateTimeseries: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description Only usage (and gates) attributed to this team (external_team_id): each event counts for the team its user was a member of at the event's time, so a member moved later leaves its past with the old team; events counted before teams were recorded belong to no team. 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: {
                            /** Format: date */
                            date: string;
                            soft_gates: number;
                            hard_gates: number;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsBreakdown: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description Count only events of this source (manual events or instrumented calls); both when absent */
                source?: "manual" | "auto";
                /** @description Only usage (and gates) attributed to this team (external_team_id): each event counts for the team its user was a member of at the event's time, so a member moved later leaves its past with the old team; events counted before teams were recorded belong to no team. 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        models: {
                            /** @description "unknown" for events sent without a model */
                            model: string;
                            cost: number;
                            tokens: number;
                            /** @description Percent (0-100) of the window's total cost; of tokens when the total cost is 0 */
                            pct: number;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsTopUsers: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description How many users (1-100) */
                limit?: number;
                /** @description Count only events of this source (manual events or instrumented calls); both when absent */
                source?: "manual" | "auto";
                /** @description Only usage (and gates) attributed to this team (external_team_id): each event counts for the team its user was a member of at the event's time, so a member moved later leaves its past with the old team; events counted before teams were recorded belong to no team. 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        users: {
                            user_id: string;
                            cost: number;
                            tokens: number;
                            events: number;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsTopTeams: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description How many teams (1-100) */
                limit?: number;
                /** @description Count only events of this source (manual events or instrumented calls); both when absent */
                source?: "manual" | "auto";
                /** @description Only this team (external_team_id); 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Highest cost first, then team_id; teams without usage in the window are absent */
                        teams: {
                            /** @description external_team_id */
                            team_id: string;
                            /** @description Dollars spent by the team's members while in the team, in the window */
                            cost: number;
                            tokens: number;
                            /** @description Usage events attributed to the team */
                            events: number;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getAnalyticsPlanSubscribers: {
        parameters: {
            query?: {
                /** @description Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow) */
                days?: number;
                /** @description Only this team's current members (external_team_id), each under its own current plan, not the team's. 404 for an unknown team; not "." or ".." */
                team_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        plans: {
                            plan_name: string;
                            /** @description Users whose current subscription is on the plan (with team_id: the team's members) */
                            subscriber_count: number;
                            /** @description Teams whose current subscription is on the plan (with team_id: 1 for the team's own plan) */
                            team_subscriber_count: number;
                        }[];
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The key does not grant access */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    createPortalToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /**
                     * @description Lifetime in seconds, 60-86400
                     * @default 3600
                     */
                    ttl_seconds?: number;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description mpt_ and 43 characters; shown once. Send it as `Authorization: Bearer <token>` to GET /portal/me */
                        token: string;
                        user_id: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                         */
                        expires_at: string;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description The body is not JSON (Content-Type) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Body validation failed; `issues` lists every problem */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    revokePortalTokens: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description external_user_id (1-255 characters), URL-encoded; not "." or ".." */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        /** @description Tokens revoked */
                        revoked: number;
                    };
                };
            };
            /** @description Invalid request (query, path or a rule of the request) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getPortalMe: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        user_id: string;
                        /** @description Plan name; "none" for a user without a plan */
                        plan: string;
                        billing_period: {
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            start: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            end: string;
                        };
                        /** @description Every dimension of the user (as GET /users/{user_id}/limits) */
                        limits: {
                            /** @description total_spend, session_spend, model_limit:<model> or limit:<name>; a team plan's prefixed team: (team:total_spend, team:limit:<name>): the gate_reason when it blocks */
                            reason: string;
                            name: string | null;
                            /** @description spend, tokens or requests */
                            metric: string;
                            /** @description minute, hour, day, week, month, period, rolling or session */
                            window: string;
                            duration_minutes: number | null;
                            model: string | null;
                            /** @description user (the user's own plan), team (a team plan's, over the team's sums) or member (a team plan's limit counted for this member alone) */
                            scope: string;
                            /** @description Dollars for spend */
                            max: number;
                            /** @description Dollars for spend; 0 for session_spend (the client counts its own sessions) */
                            used: number;
                            /** @description used / max rounded to 1e-6; 1 when max is 0 */
                            pct: number;
                            /** @description The limit's own, else the plan's */
                            soft_gate_at: number;
                            /** @description The limit's own, else the plan's */
                            hard_gate_at: number;
                            window_start: string | null;
                            resets_at: string | null;
                            buckets: {
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                start: string;
                                /** @description Dollars for spend */
                                used: number;
                            }[] | null;
                            /** @description total_spend with credits enabled and an allowance: the balance counted into max */
                            credits?: {
                                /** @description Dollars; negative with an overdraft */
                                balance: number;
                                low_at: number | null;
                            };
                        }[];
                        credits: {
                            /** @description Dollars: active grants' remaining less the overdraft */
                            balance: number;
                            /** @description Dollars of grants not yet effective */
                            pending: number;
                            overdraft: number;
                            low_at: number | null;
                            /** @description Newest first, without metadata (the product's, not the user's) */
                            grants: {
                                id: string;
                                /** @description Dollars granted */
                                amount: number;
                                /** @description Dollars left (0 once depleted, expired or voided) */
                                remaining: number;
                                kind: "paid" | "promotional";
                                priority: number;
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                effective_at: string;
                                expires_at: string | null;
                                /** @enum {string} */
                                status: "pending" | "active" | "depleted" | "expired" | "voided";
                                description: string | null;
                                /**
                                 * Format: date-time
                                 * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                                 */
                                created_at: string;
                            }[];
                        } | null;
                        usage: {
                            /** @description Dollars this billing period */
                            period_cost: number;
                            period_tokens_total: number;
                            /** @description Most costly first */
                            by_model: {
                                model: string;
                                cost: number;
                                tokens: number;
                            }[];
                        };
                        /** @description The latest 20, newest first */
                        gate_events: {
                            id: string;
                            /**
                             * Format: date-time
                             * @description ISO 8601 datetime; in a request, one without a zone (e.g. 2026-01-01T00:00:00) is read as UTC
                             */
                            timestamp: string;
                            /** @description soft_gate or hard_gate */
                            status: string;
                            gate_reason: string;
                            usage_pct: number;
                            current_value: number;
                            limit_value: number;
                            model: string | null;
                            blocked: boolean;
                            message: string | null;
                            credits?: {
                                balance: number;
                                low_at: number | null;
                            };
                        }[];
                    };
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Not found (resources of other products read as not found) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    preflightPortalMe: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Access-Control-Allow-* headers, no body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    getPortalWidget: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The widget's script */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/javascript": string;
                };
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
    preflightPortalWidget: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Access-Control-Allow-* headers, no body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Too many requests; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Request headers or URL too large */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
            /** @description Backend failure */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        detail: string;
                        issues?: {
                            location: string;
                            path: string;
                            message: string;
                        }[];
                    };
                };
            };
        };
    };
}
