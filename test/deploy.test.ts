import { readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./support/processes.ts";
import { peerUrlFields } from "@meter/lib/config";

const deploy = path.join(repoRoot, "deploy");

async function load(file: string): Promise<any[]> {
  const text = await readFile(path.join(deploy, file), "utf8");
  return parseAllDocuments(text).map((d) => d.toJS());
}

async function kustomization(dir: string): Promise<any> {
  return (await load(path.join(dir, "kustomization.yaml")))[0];
}

const SERVICES = ["tenancy", "plans", "ingestion", "analytics", "webhooks"];

test("every kustomization resource exists and parses", async () => {
  for (const dir of ["base", "overlays/local", "overlays/production"]) {
    const k = await kustomization(dir);
    for (const r of k.resources as string[]) {
      if (r.startsWith("../")) continue;
      const docs = await load(path.join(dir, r));
      assert.ok(docs.length > 0, `${dir}/${r} is empty`);
    }
  }
});

test("each service has a hardened Deployment with gRPC probes and a Service on its port", async () => {
  const peers = (await load("base/peers.yaml"))[0].data;
  for (const [i, name] of SERVICES.entries()) {
    const [deployment, service] = await load(`base/${name}.yaml`);
    assert.is(deployment.kind, "Deployment");
    assert.is(service.kind, "Service");
    const pod = deployment.spec.template.spec;
    const c = pod.containers[0];
    const port = 9091 + i;
    assert.equal(c.args, [`services/${name}/main.ts`]);
    assert.is(c.ports[0].containerPort, port);
    assert.is(c.readinessProbe.grpc.port, port);
    assert.is(c.livenessProbe.grpc.port, port);
    assert.is(c.livenessProbe.grpc.service, "liveness");
    assert.ok(c.resources.limits.cpu && c.resources.limits.memory, `${name} limits`);
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory, `${name} requests`);
    assert.is(pod.securityContext.runAsNonRoot, true);
    assert.is(c.securityContext.readOnlyRootFilesystem, true);
    assert.is(c.securityContext.allowPrivilegeEscalation, false);
    assert.is(service.spec.ports[0].port, port);
    const env = `${name.toUpperCase()}_URL` as keyof typeof peerUrlFields;
    assert.is(peers[env], `http://${name}:${port}`);
    // The code's local default port is the same as the manifest's.
    assert.is((peerUrlFields[env] as { default?: string }).default, `http://127.0.0.1:${port}`);
  }
});

test("the gateway is hardened and probed over HTTP", async () => {
  const [deployment] = await load("base/gateway.yaml");
  const c = deployment.spec.template.spec.containers[0];
  assert.equal(c.args, ["gateway/main.ts"]);
  assert.is(c.readinessProbe.httpGet.path, "/api/v1/health");
  assert.ok(c.resources.limits.memory);
  assert.is(c.securityContext.readOnlyRootFilesystem, true);
});

test("network policies deny by default", async () => {
  const policies = await load("base/network-policies.yaml");
  const deny = policies.find((p) => p.metadata.name === "default-deny");
  assert.ok(deny);
  assert.equal(deny.spec.podSelector, {});
  assert.equal(deny.spec.policyTypes, ["Ingress", "Egress"]);
  assert.not.ok(deny.spec.ingress);
  assert.not.ok(deny.spec.egress);
});

test.run();
