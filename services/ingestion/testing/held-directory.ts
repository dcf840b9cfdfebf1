import { plansDirectory, type UserDirectory } from "../adapters/plans.ts";

/**
 * The plans directory of a stack (its real gRPC client, given the address once the stack
 * listens), whose lookups naming `heldUser` wait between `arm()` and `release()`: a batch of
 * that user stays in flight in the ingestion service, holding its events, for as long as a
 * test needs. `entered()` resolves once such a lookup has begun since the last `arm()`.
 * `arm({ once: true })` holds only the first such lookup: later reads of the user answer meanwhile.
 */
export function heldDirectory(heldUser: string) {
  let real: UserDirectory | undefined;
  let hold: { released: Promise<void>; release: () => void; entered: Promise<void>; enter: () => void; once: boolean; taken: boolean } | undefined;
  const directory: UserDirectory = {
    async resolve(productId, externalUserIds) {
      const h = hold;
      if (h && !(h.once && h.taken) && externalUserIds.includes(heldUser)) {
        h.taken = true;
        h.enter();
        await h.released;
      }
      return real!.resolve(productId, externalUserIds);
    },
    resolveTeams: (productId, externalTeamIds) => real!.resolveTeams(productId, externalTeamIds),
  };
  return {
    directory,
    connect(rpcUrl: string) {
      real = plansDirectory(rpcUrl);
    },
    arm({ once = false } = {}) {
      let release!: () => void;
      let enter!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const entered = new Promise<void>((r) => (enter = r));
      hold = { released, release, entered, enter, once, taken: false };
    },
    entered: () => hold!.entered,
    release() {
      hold?.release();
      hold = undefined;
    },
  };
}
