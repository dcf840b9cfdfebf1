import { Link } from "wouter";
import { Card, CopyButton, Screen } from "../components.tsx";

/** The README's quick start, with this service's address: from nothing to usage in a few calls. */
export function QuickStartScreen() {
  const api = `${location.origin}/api/v1`;
  const steps: [string, string][] = [
    ["Keep your key in a shell variable (the console never shows it again).", `API=${api}\nAUTH="Authorization: Bearer <your API key>"`],
    [
      "Create a plan: $10 per period, gpt-4.1 at $0.002 / $0.008 per 1K input / output tokens (or use the Plans screen).",
      `curl -sf -X POST "$API/config/plans" -H "$AUTH" -H 'content-type: application/json' \\\n  -d '{"plans": [{"name": "starter", "max_spend_per_period": 10,\n                  "cost_rates": {"gpt-4.1": {"input": 0.002, "output": 0.008}}}]}'`,
    ],
    ["Register a user by your own id for them (or use the Users screen).", `curl -sf -X POST "$API/users" -H "$AUTH" -H 'content-type: application/json' \\\n  -d '{"external_user_id": "alice"}'`],
    [
      "Subscribe them for this month (a capped plan needs the period's dates; the user's page does this too).",
      `curl -sf -X POST "$API/users/alice/subscription" -H "$AUTH" -H 'content-type: application/json' \\\n  -d '{"plan_id": "<plan id>", "period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z"}'`,
    ],
    [
      "Send usage: the client library meterline (or meterline for Python) does this from your product; by hand:",
      `curl -sf -X POST "$API/events/batch" -H "$AUTH" -H 'content-type: application/json' \\\n  -d "[{\\"id\\": \\"$(uuidgen)\\", \\"user_id\\": \\"alice\\", \\"timestamp\\": \\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\\",\n        \\"model\\": \\"gpt-4.1\\", \\"input_tokens\\": 1200, \\"output_tokens\\": 300, \\"total_tokens\\": 1500,\n        \\"cost_tokens\\": 0.0048, \\"cost_total\\": 0.0048}]"`,
    ],
  ];
  return (
    <Screen title="Quick start">
    <Card title="From nothing to usage">
      <ol className="steps">
        {steps.map(([text, code]) => (
          <li key={text}>
            <p>{text}</p>
            <div className="code-row">
              <pre tabIndex={0}>{code}</pre>
              <CopyButton text={code} />
            </div>
          </li>
        ))}
      </ol>
      <p>
        Then watch the <Link href="/">Overview</Link> and the user's page move. Every route is described in the{" "}
        <a href="/api/v1/docs">API reference</a>.
      </p>
    </Card>
    </Screen>
  );
}
