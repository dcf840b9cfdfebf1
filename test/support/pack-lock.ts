import path from "node:path";
import lockfile from "proper-lockfile";
import { repoRoot } from "./processes.ts";

/**
 * Holds the TypeScript client's packing to one test at a time: `npm pack` rebuilds
 * sdk/typescript/dist in place, and two test workers packing at once could each tar the
 * other's half-written files. Resolves with the release function.
 */
export function lockSdkPacking(): Promise<() => Promise<void>> {
  return lockfile.lock(path.join(repoRoot, "sdk/typescript/package.json"), {
    retries: { retries: 1_000, minTimeout: 200, maxTimeout: 1_000 },
  });
}
