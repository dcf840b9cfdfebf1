import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { eq, gate, rolledUp } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetGateTimeseries over gRPC");
withReplicas(t, "analytics_get_gate_timeseries");

t("one point per day of the window, zeros included, soft and hard gates of this product only; days checked", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    gates: [gate(p, "2026-03-10T01:00:00Z", "hard_gate"), gate(p, "2026-03-10T02:00:00Z", "soft_gate"), gate(p, "2026-03-08T02:00:00Z", "soft_gate"), gate(randomUUID(), "2026-03-10T01:00:00Z", "hard_gate")],
  }));
  const { data } = await a.client.getGateTimeseries({ productId: p, days: 3 });
  eq(data.map((d) => [d.date, d.softGates, d.hardGates]), [["2026-03-08", 1, 0], ["2026-03-09", 0, 0], ["2026-03-10", 1, 1]]);
  eq(await rpcCode(a.client.getGateTimeseries({ productId: p, days: 366 })), Code.InvalidArgument);
});

t.run();
