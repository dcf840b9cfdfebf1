import dns from "node:dns";
import net from "node:net";
import ipaddr from "ipaddr.js";

/** Where deliveries may go. By default only https to public unicast addresses. */
export interface UrlPolicy {
  /** Also allows http and loopback targets (local use and tests). */
  allowInsecure: boolean;
}

export const MAX_URL_LENGTH = 2048;

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");

/**
 * The range of an address as the guard sees it. IPv6 addresses that embed an IPv4 one
 * (IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64, 6to4, Teredo) are never read as
 * that IPv4 address: whatever they lead to, they are refused, as is all IPv6 outside the
 * global unicast 2000::/3.
 */
function rangeOf(ip: string): string {
  const addr = ipaddr.parse(ip);
  if (addr.kind() === "ipv4") return addr.range();
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  if (range !== "unicast") return range;
  if (v6.match(IPV4_COMPATIBLE)) return "IPv4-compatible";
  return v6.match(GLOBAL_UNICAST_V6) ? "unicast" : "reserved";
}

/** Why an address may not be a delivery target, or null when it may. */
export function addressProblem(ip: string, policy: UrlPolicy): string | null {
  if (!ipaddr.isValid(ip)) return `${ip} is not an IP address`;
  const range = rangeOf(ip);
  if (range === "unicast") return null;
  if (range === "loopback" && policy.allowInsecure) return null;
  return `${ip} is a ${range} address; webhook endpoints must be publicly reachable`;
}

/** Why a URL may not be an endpoint (syntax and scheme only), or null. */
export function urlShapeProblem(raw: string, policy: UrlPolicy): string | null {
  if (raw.length > MAX_URL_LENGTH) return `url must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "url is not a valid absolute URL";
  }
  if (url.protocol !== "https:" && !(policy.allowInsecure && url.protocol === "http:")) {
    return policy.allowInsecure
      ? "url must use https or http"
      : "url must use https (for local use, WEBHOOKS_ALLOW_INSECURE_URLS=true on the service also allows http:// and loopback URLs)";
  }
  if (url.username || url.password) return "url must not contain credentials";
  if (!url.hostname) return "url must name a host";
  return null;
}

function bareHost(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;
const systemLookup: LookupAll = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * Full check at creation and update: shape, then every address the host resolves to.
 * Returns the problem, or null when the URL is acceptable.
 */
export async function endpointUrlProblem(raw: string, policy: UrlPolicy, lookup: LookupAll = systemLookup): Promise<string | null> {
  const shape = urlShapeProblem(raw, policy);
  if (shape) return shape;
  // New endpoints only (endpoints saved before still deliver where egress allows): deliveries
  // leave on 443 (deploy/'s egress policy), so another port would time out at every attempt.
  const port = new URL(raw).port;
  if (!policy.allowInsecure && port !== "") return `url must use https's own port 443, not ${port}`;
  const host = bareHost(new URL(raw));
  if (net.isIP(host)) return addressProblem(host, policy);
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host);
  } catch {
    return `host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `host ${host} does not resolve`;
  for (const a of addresses) {
    const p = addressProblem(a.address, policy);
    if (p) return `host ${host} resolves to ${p.replace(/^\S+ /, "an address that ")}`;
  }
  return null;
}

/**
 * A `lookup` for the delivery client's sockets: resolves and refuses the connection when any
 * address is not allowed. The socket connects to the address checked here, so a DNS answer
 * that changes after the endpoint was validated (rebinding) cannot reach a private target.
 */
export function guardedLookup(policy: UrlPolicy): net.LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: any[]) => void) => {
    dns.lookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err);
      for (const a of addresses) {
        const problem = addressProblem(a.address, policy);
        if (problem) return callback(Object.assign(new Error(`refused: ${problem}`), { code: "EWEBHOOKTARGET" }));
      }
      if (options?.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  }) as net.LookupFunction;
}

/** Checks an IP-literal host at send time (sockets skip lookup for literals). */
export function literalHostProblem(raw: string, policy: UrlPolicy): string | null {
  const shape = urlShapeProblem(raw, policy);
  if (shape) return shape;
  const host = bareHost(new URL(raw));
  return net.isIP(host) ? addressProblem(host, policy) : null;
}
