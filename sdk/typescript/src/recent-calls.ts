// What a user's calls of a model really cost lately: the default reservation of a call in
// flight (reservation.ts) is the typical one. Kept apart so the user state that holds these
// and the reservation rule that reads them import it, not each other.

/** Real calls remembered per user and model for the default reservation. */
export const TYPICAL_CALLS = 8;

/** The real cost and tokens of the last TYPICAL_CALLS calls of one user and model (a ring). */
export class RecentCalls {
  readonly #costs: number[] = [];
  readonly #tokens: number[] = [];
  #next = 0;

  add(cost: number, tokens: number): void {
    this.#costs[this.#next] = cost;
    this.#tokens[this.#next] = tokens;
    this.#next = (this.#next + 1) % TYPICAL_CALLS;
  }

  /** The typical call: the largest cost and the largest token count among the calls remembered. */
  typical(): { cost: number; tokens: number } {
    let cost = 0;
    let tokens = 0;
    for (let i = 0; i < this.#costs.length; i++) {
      if (this.#costs[i]! > cost) cost = this.#costs[i]!;
      if (this.#tokens[i]! > tokens) tokens = this.#tokens[i]!;
    }
    return { cost, tokens };
  }
}
