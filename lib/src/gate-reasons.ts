/**
 * The gate reasons a gate event may carry (BUDGETS.md §1-2, §4, §6), shared by the gateway's
 * schema and the ingestion service's own check: SPEC's three, `limit:<name>` of a plan's limits
 * (names as the plans service accepts them), and a team plan's dimensions prefixed `team:`
 * (its session cap is not one).
 */
export const GATE_REASON_PATTERN = "^(total_spend|session_spend|model_limit:.+|limit:[a-z0-9_-]{1,64}|team:(total_spend|model_limit:.+|limit:[a-z0-9_-]{1,64}))$";

export const GATE_REASON_HINT = "must be total_spend, session_spend, model_limit:<model>, limit:<name>, or team: followed by total_spend, model_limit:<model> or limit:<name>";
