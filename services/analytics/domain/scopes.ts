/**
 * What a rollup document is of: a product, one of its teams, or its teams side by side. Each
 * scope has the same documents (a day's figures and its rows in chunks, `<scope>|<day>`), so
 * every query reads a team's figures as it reads a product's, by `_id` only. Pure.
 *
 * - the product: `<product>`; its rows are users (a user moved during a day has a row per team);
 * - a team: `<product>|team:<external team id>`; the figures of the events attributed to it,
 *   its rows are its users;
 * - the teams: `<product>|teams`; its rows are teams (top teams), its totals those of every
 *   event attributed to a team.
 *
 * The ids never meet: a product id has no `|`, a day starts with a digit, and a day and chunk
 * number end every id, so a team id (any string) cannot make one scope's id another's.
 */
export type Scope = string;

export const productScope = (productId: string): Scope => productId;
export const teamScope = (productId: string, teamId: string): Scope => `${productId}|team:${teamId}`;
export const teamsScope = (productId: string): Scope => `${productId}|teams`;

/** The scope a query reads: the product's, or one team's when a team filter is set. */
export const scopeOf = (productId: string, teamId: string | undefined): Scope => (teamId === undefined ? productScope(productId) : teamScope(productId, teamId));
