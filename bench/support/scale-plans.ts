// The plans bench:scale and bench:team-writes configure, so that both measure the same product.

/**
 * "pro": a period cap and `windows` (0-4) of its limits (a day and a month in a time zone, a
 * rolling 5 hours, requests a minute: each session also reads the user's window document);
 * "team": a team cap, a team-scope daily window (the team's counter) and a member-scope one
 * (in each member's window document).
 */
export function scalePlans(windows: number) {
  return [
    {
      name: "pro",
      max_spend_per_period: 1_000_000,
      limits: [
        { name: "daily", metric: "spend", max: 100_000, window: "day" },
        { name: "monthly", metric: "spend", max: 1_000_000, window: "month" },
        { name: "five-hours", metric: "spend", max: 50_000, window: "rolling", duration_minutes: 300 },
        { name: "rpm", metric: "requests", max: 1_000_000, window: "minute" },
      ].slice(0, windows),
      time_zone: "America/New_York",
    },
    {
      name: "team",
      max_spend_per_period: 10_000_000,
      limits: [
        { name: "team-daily", metric: "spend", max: 1_000_000, window: "day", scope: "team" },
        { name: "seat-daily", metric: "spend", max: 100_000, window: "day", scope: "member" },
      ],
    },
  ];
}
