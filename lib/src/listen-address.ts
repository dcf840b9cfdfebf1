import { createServer } from "node:net";

/**
 * A process's listening address (`HOST`) as a pod needs it: by default every address, IPv6 and
 * IPv4 alike ("::" listens on both), so that the process answers in an IPv6-only or dual-stack
 * cluster as in an IPv4 one. On a kernel without IPv6, "::" cannot be bound: every IPv4 address
 * ("0.0.0.0") then. Any other host is used as given.
 */
export const ANY_ADDRESS = "::";

export async function listenAddress(host: string): Promise<string> {
  if (host !== ANY_ADDRESS) return host;
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve("0.0.0.0"));
    probe.listen(0, ANY_ADDRESS, () => probe.close(() => resolve(ANY_ADDRESS)));
  });
}
