import { readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseAllDocuments } from "yaml";
import type { TObject } from "typebox";
import { repoRoot } from "./support/processes.ts";
import { loadConfig, peerUrlFields } from "@meter/lib/config";
import { registry } from "@meter/lib/metrics";
import { gatewayConfigSchema } from "@meter/gateway/config";
import { analyticsConfigSchema } from "../services/analytics/config.ts";
import { ingestionConfigSchema } from "../services/ingestion/config.ts";
import { plansConfigSchema } from "../services/plans/config.ts";
import { tenancyConfigSchema } from "../services/tenancy/config.ts";
import { webhooksConfigSchema, webhooksSettings } from "../services/webhooks/config.ts";

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
  // Readiness asks no backend: one slow service must not take every gateway out of rotation.
  assert.is(c.readinessProbe.httpGet.path, "/readyz");
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

test("the Grafana dashboard reads only series the processes export", async () => {
  const dashboard = JSON.parse(await readFile(path.join(deploy, "grafana/meter-dashboard.json"), "utf8"));
  const exported = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    exported.add(m.name);
    if (String(m.type) === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) exported.add(m.name + suffix);
  }
  const used = new Set<string>();
  for (const panel of dashboard.panels) {
    assert.ok(panel.targets.length > 0, `${panel.title} has a query`);
    for (const target of panel.targets) {
      for (const name of target.expr.match(/\b(?:meter|process|nodejs)_[a-z0-9_]+/g) ?? []) used.add(name);
    }
  }
  for (const name of used) assert.ok(exported.has(name), `the dashboard reads ${name}, which no process exports`);
  for (const name of ["meter_http_requests_total", "meter_rpc_request_duration_seconds_bucket", "meter_ingestion_events_total", "meter_outbox_depth", "meter_webhook_deliveries_total", "meter_job_lag_seconds"]) {
    assert.ok(used.has(name), `the dashboard shows ${name}`);
  }
});

// ---- Overlays, rendered the way kustomize does for the features these files use ----------

type Doc = Record<string, any>;

/** JSON6902 operations of inline patches (add, replace, remove), as kustomize applies them. */
function applyJsonPatch(doc: Doc, ops: { op: string; path: string; value?: unknown }[]): void {
  for (const { op, path: p, value } of ops) {
    const keys = p.split("/").slice(1).map((k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = keys.pop()!;
    let target: any = doc;
    for (const k of keys) target = target[k];
    if (op === "remove") delete target[last];
    else if (op === "add" || op === "replace") {
      if (op === "replace" && !(last in target)) throw new Error(`replace of missing ${p}`);
      target[last] = structuredClone(value);
    } else throw new Error(`unsupported patch op ${op}`);
  }
}

/** Renders a kustomization directory: resources (recursively), labels, namespace, patches, generators, images. */
async function render(dir: string): Promise<Doc[]> {
  const k = await kustomization(dir);
  let docs: Doc[] = [];
  for (const r of k.resources as string[]) {
    const rel = path.join(dir, r);
    docs.push(...(r.endsWith(".yaml") ? await load(rel) : await render(rel)));
  }
  for (const { pairs } of k.labels ?? []) for (const d of docs) d.metadata.labels = { ...d.metadata.labels, ...pairs };
  for (const g of k.secretGenerator ?? []) {
    const data = Object.fromEntries(
      (g.literals as string[]).map((l) => [l.slice(0, l.indexOf("=")), Buffer.from(l.slice(l.indexOf("=") + 1)).toString("base64")]),
    );
    docs.push({ apiVersion: "v1", kind: "Secret", metadata: { name: g.name }, data });
  }
  for (const patch of k.patches ?? []) {
    for (const d of docs.filter((d) => d.kind === patch.target.kind && (!patch.target.name || d.metadata.name === patch.target.name))) {
      applyJsonPatch(d, parseAllDocuments(patch.patch)[0]!.toJS());
    }
  }
  if (k.namespace) for (const d of docs) if (d.kind !== "Namespace") d.metadata.namespace = k.namespace;
  for (const img of k.images ?? []) {
    for (const d of docs.filter((d) => d.kind === "Deployment")) {
      for (const c of d.spec.template.spec.containers) {
        if (c.image === img.name || c.image.startsWith(`${img.name}:`)) c.image = `${img.newName ?? img.name}:${img.newTag ?? "latest"}`;
      }
    }
  }
  return docs;
}

/** The config schema of the process a container runs, by its entry point. */
const SCHEMAS: Record<string, TObject> = {
  "gateway/main.ts": gatewayConfigSchema,
  "services/tenancy/main.ts": tenancyConfigSchema,
  "services/plans/main.ts": plansConfigSchema,
  "services/ingestion/main.ts": ingestionConfigSchema,
  "services/analytics/main.ts": analyticsConfigSchema,
  "services/webhooks/main.ts": webhooksConfigSchema,
};

/** Secrets production creates out of band (see its kustomization), with values of the right form. */
const OUT_OF_BAND: Record<string, Record<string, string>> = {
  "meter-mongodb": { url: "mongodb://mongodb.example:27017/?replicaSet=rs0" },
  "meter-webhooks": { "secret-key": "00".repeat(32) },
};

function labelsMatch(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

for (const overlay of ["local", "production"]) {
  test(`overlay ${overlay}: every container's environment is known to its process and valid`, async () => {
    const docs = await render(`overlays/${overlay}`);
    const byKind = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name);
    const deployments = docs.filter((d) => d.kind === "Deployment");
    assert.is(deployments.length, 6);
    for (const d of deployments) {
      assert.is(d.metadata.namespace, "meter");
      for (const c of d.spec.template.spec.containers) {
        const schema = SCHEMAS[c.args[0]];
        assert.ok(schema, `${d.metadata.name} runs a known entry point`);
        const env: Record<string, string> = {};
        for (const ref of c.envFrom ?? []) {
          const cm = byKind("ConfigMap", ref.configMapRef.name);
          assert.ok(cm, `${d.metadata.name}: ConfigMap ${ref.configMapRef.name} exists`);
          Object.assign(env, cm.data);
        }
        for (const e of c.env ?? []) {
          if (e.value !== undefined) env[e.name] = String(e.value);
          else if (e.valueFrom.configMapKeyRef) {
            const { name, key } = e.valueFrom.configMapKeyRef;
            const value = byKind("ConfigMap", name)?.data?.[key];
            assert.ok(value !== undefined, `${d.metadata.name}: ${e.name} comes from ConfigMap ${name}/${key}`);
            env[e.name] = value;
          } else {
            const { name, key } = e.valueFrom.secretKeyRef;
            const secret = byKind("Secret", name);
            const value = secret ? Buffer.from(secret.data[key] ?? "", "base64").toString() : overlay === "production" ? OUT_OF_BAND[name]?.[key] : undefined;
            assert.ok(value, `${d.metadata.name}: ${e.name} comes from secret ${name}/${key}, which ${overlay} provides`);
            env[e.name] = value;
          }
        }
        const known = Object.keys(schema.properties);
        for (const name of Object.keys(env)) assert.ok(known.includes(name), `${d.metadata.name}: ${name} is not read by ${c.args[0]}`);
        const config = loadConfig(schema, env) as Record<string, any>;
        assert.is(config.PORT, c.ports[0].containerPort, `${d.metadata.name} listens on its container port`);
        // Secrets of the right size: the webhooks key must open as 32 bytes.
        if (c.args[0] === "services/webhooks/main.ts") {
          assert.ok(env.WEBHOOKS_SECRET_KEY, "the webhooks key is set");
          assert.is(webhooksSettings(config as any).secretKey!.length, 32);
        }
      }
    }
  });

  test(`overlay ${overlay}: probes, resources, hardening and metrics scraping are in place`, async () => {
    const docs = await render(`overlays/${overlay}`);
    const policies = docs.filter((d) => d.kind === "NetworkPolicy");
    const deny = policies.find((p) => p.metadata.name === "default-deny");
    assert.ok(deny && Object.keys(deny.spec.podSelector).length === 0, "default deny");
    for (const d of docs.filter((d) => d.kind === "Deployment")) {
      const pod = d.spec.template;
      const c = pod.spec.containers[0];
      const name = d.metadata.name;
      assert.ok(c.readinessProbe && c.livenessProbe, `${name} probes`);
      assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.cpu && c.resources.limits.memory, `${name} resources`);
      assert.is(pod.spec.securityContext.runAsNonRoot, true);
      assert.is(c.securityContext.readOnlyRootFilesystem, true);
      // Prometheus finds /metrics on the container's port, and a policy lets it in.
      const port = c.ports[0].containerPort;
      assert.equal(
        [pod.metadata.annotations["prometheus.io/scrape"], pod.metadata.annotations["prometheus.io/port"], pod.metadata.annotations["prometheus.io/path"]],
        ["true", String(port), "/metrics"],
      );
      const scrape = policies.find(
        (p) =>
          labelsMatch(p.spec.podSelector.matchLabels, pod.metadata.labels) &&
          (p.spec.ingress ?? []).some(
            (rule: Doc) =>
              (rule.ports ?? []).some((p: Doc) => p.port === port) &&
              (rule.from ?? []).some((f: Doc) => f.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "prometheus"),
          ),
      );
      assert.ok(scrape, `${name}: a NetworkPolicy admits Prometheus on port ${port}`);
    }
  });
}

test.run();
