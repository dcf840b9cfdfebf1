import { suite } from "uvu";
import { eq, rolledUp, usage } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetTopUsers over gRPC");
withReplicas(t, "analytics_get_top_users");

t("top users: by cost, then user id; limited", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    usage: [
      usage(p, "2026-03-10T01:00:00Z", { userId: "carol", cost: 3 }),
      usage(p, "2026-03-01T01:00:00Z", { userId: "bob", cost: 2, tokens: 5n }),
      usage(p, "2026-03-02T01:00:00Z", { userId: "bob", cost: 1, tokens: 5n }),
      usage(p, "2026-03-10T01:00:00Z", { userId: "alice", cost: 1 }),
      usage(p, "2026-03-10T01:00:00Z", { userId: "dave", cost: 0.5 }),
    ],
  }));
  const all = await a.client.getTopUsers({ productId: p, days: 30 });
  eq(
    all.users.map((u) => [u.userId, u.cost, u.tokens, u.events]),
    [
      ["bob", 3, 10n, 2n],
      ["carol", 3, 100n, 1n],
      ["alice", 1, 100n, 1n],
      ["dave", 0.5, 100n, 1n],
    ],
  );
  eq((await a.client.getTopUsers({ productId: p, days: 30, limit: 2 })).users.map((u) => u.userId), ["bob", "carol"]);
  eq((await a.client.getTopUsers({ productId: p, days: 1, limit: 1 })).users.map((u) => u.userId), ["carol"]);
});

t.run();
