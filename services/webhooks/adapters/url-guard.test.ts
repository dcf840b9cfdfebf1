import { test } from "uvu";
import * as assert from "uvu/assert";
import { addressProblem, endpointUrlProblem } from "./url-guard.ts";

const strict = { allowInsecure: false };
const local = { allowInsecure: true };

test("address policy", () => {
  for (const ip of ["8.8.8.8", "2606:4700::1"]) assert.is(addressProblem(ip, strict), null, ip);
  for (const ip of ["127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "224.0.0.1"]) {
    assert.ok(addressProblem(ip, strict), ip);
  }
  // IPv6 that embeds IPv4 (compatible ::/96, mapped, NAT64, 6to4, Teredo) and all IPv6 outside
  // 2000::/3, whatever IPv4 address it carries.
  for (const ip of ["::7f00:1", "::a00:1", "::808:808", "::ffff:8.8.8.8", "::ffff:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::", "2001::1", "100::1", "fec0::1", "4000::1", "::"]) {
    assert.ok(addressProblem(ip, strict), ip);
    assert.ok(addressProblem(ip, local), `${ip} (insecure URLs allowed)`);
  }
  assert.is(addressProblem("127.0.0.1", local), null);
  assert.is(addressProblem("::1", local), null);
  assert.ok(addressProblem("10.0.0.1", local));
});

test("URL check resolves the host and refuses any private answer", async () => {
  const answers = (list: string[]) => async () => list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  assert.is(await endpointUrlProblem("https://hooks.example/x", strict, answers(["93.184.215.14"])), null);
  assert.match(String(await endpointUrlProblem("https://hooks.example/x", strict, answers(["93.184.215.14", "10.0.0.7"]))), /resolves to/);
  assert.match(String(await endpointUrlProblem("https://nowhere.example/", strict, async () => { throw new Error("ENOTFOUND"); })), /does not resolve/);
  // The refusal names the switch a local setup needs.
  assert.match(String(await endpointUrlProblem("http://hooks.example/", strict, answers(["93.184.215.14"]))), /must use https.*WEBHOOKS_ALLOW_INSECURE_URLS=true/);
  assert.match(String(await endpointUrlProblem("https://hooks.example:8443/x", strict, answers(["93.184.215.14"]))), /port 443, not 8443/);
  assert.is(await endpointUrlProblem("https://hooks.example:443/x", strict, answers(["93.184.215.14"])), null);
  assert.match(String(await endpointUrlProblem("https://" + "a".repeat(2100) + ".example/", strict)), /at most/);
});

test.run();
