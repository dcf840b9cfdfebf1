import { useMemo, type ReactNode } from "react";
import { useQuery } from "@tanstack/react-query";
import type { Usage } from "../api/client.ts";
import { usagePeriod, type Read } from "../api/reads.ts";
import { BarList, Card, DataTable, Empty, Field, num, Options, Query } from "../components.tsx";
import { fmtExactMoney, fmtInt, fmtTokens } from "../format.ts";
import { useUrlState } from "../url-state.ts";
import { byModel } from "../usage-rows.ts";

function pastMonths(n: number): string[] {
  const now = new Date();
  return Array.from({ length: n }, (_, i) => {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - i - 1, 1));
    return d.toISOString().slice(0, 7);
  });
}

/** A user's or a team's usage (GET …/usage, one shape for both) by model, in the period chosen (kept in the URL). */
export function UsageByModel({ read, empty }: { read: (period: string) => Read<Usage>; empty: ReactNode }) {
  const [params, set] = useUrlState();
  const period = usagePeriod(params);
  const usage = useQuery(read(period));
  const months = useMemo(() => pastMonths(12), []);
  return (
    <Card
      title="Usage by model"
      actions={
        <Field label="Period">
          {(fid) => (
            <select id={fid} value={period} onChange={(e) => set({ period: e.target.value === "current_period" ? null : e.target.value })}>
              <option value="current_period">Current billing period</option>
              <option value="current_month">This month</option>
              <Options values={months} />
            </select>
          )}
        </Field>
      }
    >
      <Query q={usage} label="Loading usage">
        {(u) => {
          const rows = byModel(u);
          return (
            <>
              <div className="cards compact">
                <div className="kv">
                  <span>Cost</span>
                  <strong>{fmtExactMoney(u.total_cost)}</strong>
                </div>
                <div className="kv">
                  <span>Tokens</span>
                  <strong title={fmtInt(u.total_tokens)}>{fmtTokens(u.total_tokens)}</strong>
                </div>
                <div className="kv">
                  <span>Tool calls</span>
                  <strong>{fmtInt(u.tool_calls_count)}</strong>
                </div>
              </div>
              {rows.length === 0 ? (
                <Empty>{empty}</Empty>
              ) : (
                <>
                  <BarList title="Cost per model" rows={rows.map((r) => ({ label: r.label, value: r.cost, text: fmtExactMoney(r.cost) }))} />
                  <DataTable caption="Usage per model" columns={["Model", num("Cost"), num("Tokens")]}>
                    {rows.map((r) => (
                      <tr key={r.label}>
                        <td title={r.model ? undefined : "events recorded without a model (manual events with a cost)"}>{r.label}</td>
                        <td className="num">{fmtExactMoney(r.cost)}</td>
                        <td className="num">{fmtInt(r.tokens)}</td>
                      </tr>
                    ))}
                  </DataTable>
                </>
              )}
            </>
          );
        }}
      </Query>
    </Card>
  );
}
