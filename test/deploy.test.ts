import { readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseAllDocuments } from "yaml";
import type { TObject } from "typebox";
import { repoRoot } from "./support/processes.ts";
import { kustomize, validateAgainstSchema } from "./support/kustomize.ts";
import { loadConfig, peerUrlFields } from "@meter/lib/config";
import { registry } from "@meter/lib/metrics";
import { gatewayConfigSchema, protectionSettings } from "@meter/gateway/config";
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
    assert.equal(c.lifecycle.preStop.exec.command, ["sleep", "5"], `${name} preStop`);
    // A slow start (a backfill) is waited for, and no probe gives up before the 2 s health check does.
    assert.ok(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold >= 300, `${name} startup`);
    for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) assert.ok(probe.timeoutSeconds > 2, `${name} probe timeout`);
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
  // Liveness only after a first answer: a cold start on a busy node is not killed for being slow.
  assert.is(c.startupProbe.httpGet.path, "/readyz");
  assert.ok(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold >= 60, "gateway startup");
  // Endpoints drop a terminating gateway before it closes its port: no 503 through the ingress on a rollout.
  assert.equal(c.lifecycle.preStop.exec.command, ["sleep", "5"]);
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
  // The alerting rules likewise, and each names the signal docs/operations.md says to alert on.
  const rules = parseAllDocuments(await readFile(path.join(deploy, "prometheus/meter-alerts.yaml"), "utf8"))[0]!.toJS() as { groups: { rules: { alert: string; expr: string }[] }[] };
  const alerted = new Set<string>();
  for (const rule of rules.groups.flatMap((g) => g.rules)) {
    assert.ok(rule.alert && rule.expr, "each rule has an alert name and an expression");
    for (const name of rule.expr.match(/\b(?:meter|process|nodejs)_[a-z0-9_]+/g) ?? []) {
      assert.ok(exported.has(name), `the alert ${rule.alert} reads ${name}, which no process exports`);
      alerted.add(name);
    }
  }
  for (const name of ["meter_outbox_set_aside", "meter_ingestion_jobs_quarantined_total", "meter_job_failures_total"]) assert.ok(alerted.has(name), `an alert on ${name}`);
  // The Prometheus operator's PodMonitor selects the pods and the port the manifests declare for metrics.
  const [monitor] = parseAllDocuments(await readFile(path.join(deploy, "prometheus/meter-podmonitor.yaml"), "utf8")).map((d) => d.toJS() as Doc);
  assert.is(monitor!.kind, "PodMonitor");
  const deployments = (await Promise.all(["gateway", "tenancy", "plans", "ingestion", "analytics", "webhooks"].map((n) => load(`base/${n}.yaml`)))).map((docs) => docs.find((d: Doc) => d.kind === "Deployment")!);
  for (const d of deployments) {
    const labels = d.spec.template.metadata.labels as Record<string, string>;
    for (const [k, v] of Object.entries(monitor!.spec.selector.matchLabels as Record<string, string>)) assert.is(labels[k], v, `${d.metadata.name} is selected`);
    const ports = d.spec.template.spec.containers[0].ports as Doc[];
    assert.ok(ports.some((p) => p.name === monitor!.spec.podMetricsEndpoints[0].port && p.containerPort === 9100), `${d.metadata.name} names its metrics port`);
  }
  for (const name of ["meter_http_requests_total", "meter_rpc_request_duration_seconds_bucket", "meter_ingestion_events_total", "meter_outbox_depth", "meter_webhook_deliveries_total", "meter_job_lag_seconds"]) {
    assert.ok(used.has(name), `the dashboard shows ${name}`);
  }
});

// ---- Overlays, rendered by kustomize itself and checked against the Kubernetes API schemas --

type Doc = Record<string, any>;

const rendered = new Map<string, Promise<Doc[]>>();
/** An overlay as `kubectl apply -k` sends it (rendered once per run). */
function render(dir: string): Promise<Doc[]> {
  if (!rendered.has(dir)) rendered.set(dir, kustomize(path.join(deploy, dir)));
  return rendered.get(dir)!.then((docs) => structuredClone(docs));
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
  // One MongoDB user a service, allowed its own database only (docs/operations.md, "Deploying").
  "meter-mongodb": Object.fromEntries(
    ["tenancy", "plans", "ingestion", "analytics", "webhooks"].map((s) => [s, `mongodb://meter-${s}:pw@mongodb.example:27017/?replicaSet=rs0&authSource=admin`]),
  ),
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
    // The namespace comes with the overlay: `kubectl apply -k` on a fresh cluster needs nothing made before it.
    assert.ok(byKind("Namespace", "meter"), `${overlay} creates the namespace meter`);
    for (const d of deployments) {
      assert.is(d.metadata.namespace, "meter");
      const c0 = d.spec.template.spec.containers[0];
      // A local cluster runs the image built and loaded by hand (no registry): never pulled. Production pulls a versioned tag.
      if (overlay === "local") assert.equal([c0.image, c0.imagePullPolicy], ["meter:dev", "IfNotPresent"], `${d.metadata.name}'s image on a local cluster`);
      else assert.not.match(c0.image, /:latest$/, `${d.metadata.name} runs a versioned image`);
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
            const { name, key, optional } = e.valueFrom.secretKeyRef;
            const secret = byKind("Secret", name);
            const value = secret ? Buffer.from(secret.data[key] ?? "", "base64").toString() : overlay === "production" ? OUT_OF_BAND[name]?.[key] : undefined;
            // An optional key (a rotation's previous webhooks key) is absent from the process when not provided.
            if (optional && !value) continue;
            assert.ok(value, `${d.metadata.name}: ${e.name} comes from secret ${name}/${key}, which ${overlay} provides`);
            // Each service connects as itself: a credential that reaches only the collections it owns.
            if (e.name === "MONGODB_URL") assert.is(key, d.metadata.name, `${d.metadata.name} reads the database credential of its own`);
            env[e.name] = value;
          }
        }
        const known = Object.keys(schema.properties);
        for (const name of Object.keys(env)) assert.ok(known.includes(name), `${d.metadata.name}: ${name} is not read by ${c.args[0]}`);
        const config = loadConfig(schema, env) as Record<string, any>;
        assert.is(config.PORT, c.ports[0].containerPort, `${d.metadata.name} listens on its container port`);
        // Metrics apart, on the port the pod declares for them.
        const metricsPort = c.ports.find((p: Doc) => p.name === "metrics")?.containerPort;
        assert.ok(metricsPort && metricsPort !== config.PORT, `${d.metadata.name} declares a metrics port of its own`);
        assert.is(config.METRICS_PORT, metricsPort, `${d.metadata.name} serves /metrics on its metrics port only`);
        if (c.args[0] === "gateway/main.ts") {
          // Behind the ingress the client address comes from X-Forwarded-For, one hop deep.
          assert.is(protectionSettings(config as any).trustProxy, 1, "the gateway trusts the ingress controller's hop");
        }
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
      // Prometheus finds /metrics on the container's metrics port, and a policy lets it in.
      const port = c.ports.find((p: Doc) => p.name === "metrics").containerPort;
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

  test(`overlay ${overlay}: only the API and the console are public, metrics stay on their port, egress has destinations`, async () => {
    const docs = await render(`overlays/${overlay}`);
    const policies = docs.filter((d) => d.kind === "NetworkPolicy");
    const deployments = docs.filter((d) => d.kind === "Deployment");
    const workloads = docs.filter((d) => d.kind === "Deployment" || d.kind === "StatefulSet");
    const metricsPorts = new Set(deployments.map((d) => d.spec.template.spec.containers[0].ports.find((p: Doc) => p.name === "metrics").containerPort));
    const portNamed = (d: Doc, name: string) => d.spec.template.spec.containers[0].ports.find((p: Doc) => p.name === name);

    // No Service exposes a metrics port; the gateway's Service only its HTTP port.
    for (const svc of docs.filter((d) => d.kind === "Service")) {
      const target = workloads.find((d) => labelsMatch(svc.spec.selector, d.spec.template.metadata.labels));
      assert.ok(target, `${svc.metadata.name} selects a workload`);
      for (const p of svc.spec.ports) {
        const container = typeof p.targetPort === "string" ? portNamed(target, p.targetPort) : { containerPort: p.targetPort ?? p.port };
        assert.ok(container, `${svc.metadata.name}: target port ${p.targetPort} exists`);
        assert.not.ok(metricsPorts.has(container.containerPort), `${svc.metadata.name} does not expose a metrics port`);
      }
    }
    // The ingress routes the API and the console only, to the gateway's HTTP port.
    const ingresses = docs.filter((d) => d.kind === "Ingress");
    assert.is(ingresses.length, 1);
    // The batch routes' 10 MiB pass the controller (ingress-nginx stops at 1 MiB by default).
    assert.is(ingresses[0]!.metadata.annotations["nginx.ingress.kubernetes.io/proxy-body-size"], "10m");
    // Bearer keys cross it: production serves HTTPS only, with its certificate.
    if (overlay === "production") {
      assert.equal(ingresses[0]!.spec.tls, [{ hosts: ["meter.example.com"], secretName: "meter-tls" }]);
      assert.is(ingresses[0]!.metadata.annotations["nginx.ingress.kubernetes.io/force-ssl-redirect"], "true");
      assert.ok(ingresses[0]!.spec.rules.every((r: Doc) => r.host === "meter.example.com"), "its rules name the host of the certificate");
    }
    for (const rule of ingresses[0]!.spec.rules) {
      assert.equal(rule.http.paths.map((p: Doc) => p.path), ["/api", "/console"]);
      for (const p of rule.http.paths) {
        assert.is(p.pathType, "Prefix");
        assert.equal(p.backend.service, { name: "gateway", port: { name: "http" } });
      }
    }

    const fromMonitoring = (peer: Doc) => peer.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] === "monitoring";
    for (const p of policies) {
      for (const rule of p.spec.ingress ?? []) {
        // Every ingress rule names who may connect: no port is open to any pod of any namespace.
        assert.ok((rule.from ?? []).length > 0, `${p.metadata.name}: an ingress rule without sources`);
        // The monitoring namespace reaches metrics ports and nothing else (not the gRPC ports).
        if ((rule.from ?? []).some(fromMonitoring)) {
          assert.ok(rule.ports?.length > 0, `${p.metadata.name}: monitoring limited to ports`);
          for (const port of rule.ports) assert.ok(metricsPorts.has(port.port), `${p.metadata.name}: monitoring may reach port ${port.port}`);
        }
      }
      // Egress to MongoDB and to HTTPS has destinations.
      for (const rule of p.spec.egress ?? []) {
        const ports = (rule.ports ?? []).map((x: Doc) => x.port);
        assert.ok(ports.length > 0, `${p.metadata.name}: an egress rule to every port`);
        if (ports.includes(27017) || ports.includes(443)) {
          assert.ok((rule.to ?? []).length > 0, `${p.metadata.name}: egress on ${ports} without a destination`);
        }
        for (const to of rule.to ?? []) {
          if (to.ipBlock?.cidr === "0.0.0.0/0") {
            for (const internal of ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]) {
              assert.ok(to.ipBlock.except?.includes(internal), `${p.metadata.name}: ${internal} excluded from the internet`);
            }
          }
        }
      }
    }
    const gatewayIngress = policies.filter((p) => p.spec.podSelector.matchLabels?.["meter/tier"] === "gateway");
    assert.ok(gatewayIngress.length > 0, "a policy admits the gateway's callers");
    // The gateway (no database) has no route to MongoDB.
    const gateway = deployments.find((d) => d.metadata.name === "gateway")!.spec.template.metadata.labels;
    for (const p of policies.filter((p) => labelsMatch(p.spec.podSelector.matchLabels, gateway))) {
      for (const rule of p.spec.egress ?? []) assert.not.ok(rule.ports?.some((x: Doc) => x.port === 27017), `${p.metadata.name} lets the gateway reach MongoDB`);
    }
  });
}

for (const overlay of ["local", "production"]) {
  test(`overlay ${overlay}: every object is valid against the Kubernetes API schema of its kind`, async () => {
    const docs = await render(`overlays/${overlay}`);
    assert.ok(docs.length > 20);
    for (const d of docs) await validateAgainstSchema(d);
  });
}

test("the schema check refuses an invalid object", async () => {
  const [deployment] = await load("base/ingestion.yaml");
  deployment.spec.replicas = "two";
  try {
    await validateAgainstSchema(deployment);
    assert.unreachable("a string replica count passed");
  } catch (err) {
    assert.match((err as Error).message, /Deployment ingestion/);
  }
});

test("overlay local: brings the one-member MongoDB replica set its connection string names", async () => {
  const docs = await render("overlays/local");
  const secret = docs.find((d) => d.kind === "Secret" && d.metadata.name.startsWith("meter-mongodb"))!;
  const urls = ["tenancy", "plans", "ingestion", "analytics", "webhooks"].map((s) => Buffer.from(secret.data[s] ?? "", "base64").toString());
  assert.is(new Set(urls).size, 1, "a local cluster's services reach the same unauthenticated database");
  const url = new URL(urls[0]!);
  const [pod, service, namespace] = url.hostname.split(".");
  assert.is(namespace, "meter");
  const statefulSet = docs.find((d) => d.kind === "StatefulSet" && `${d.metadata.name}-0` === pod)!;
  assert.ok(statefulSet, `a StatefulSet runs ${pod}`);
  assert.is(statefulSet.metadata.namespace, "meter");
  assert.is(statefulSet.spec.serviceName, service);
  const headless = docs.find((d) => d.kind === "Service" && d.metadata.name === service);
  assert.is(headless?.spec.clusterIP, "None", "the member's name resolves through a headless Service");
  assert.ok(labelsMatch(headless!.spec.selector, statefulSet.spec.template.metadata.labels));
  const mongod = statefulSet.spec.template.spec.containers[0];
  const replSet = mongod.args[mongod.args.indexOf("--replSet") + 1];
  assert.is(replSet, url.searchParams.get("replicaSet"), "mongod serves the replica set the services ask for");
  assert.ok(mongod.ports.some((p: Doc) => p.containerPort === Number(url.port)));
  assert.ok(statefulSet.spec.volumeClaimTemplates.some((v: Doc) => mongod.volumeMounts.some((m: Doc) => m.name === v.metadata.name && m.mountPath === "/data/db")), "data on a volume");
  assert.is(statefulSet.spec.template.spec.securityContext.runAsNonRoot, true);
  assert.is(mongod.securityContext.readOnlyRootFilesystem, true);

  // The set is initiated with the same member host the services connect to.
  const job = docs.find((d) => d.kind === "Job")!;
  const script = job.spec.template.spec.containers[0].command.join(" ");
  assert.ok(script.includes(`_id: "${replSet}"`) && script.includes(`host: "${url.host}"`), "the Job initiates the set as the services address it");

  // Default deny holds, and the policies open exactly the paths MongoDB needs.
  const policies = docs.filter((d) => d.kind === "NetworkPolicy");
  const mongoLabels = statefulSet.spec.template.metadata.labels;
  const service0 = docs.find((d) => d.kind === "Deployment" && d.metadata.name === "ingestion")!.spec.template.metadata.labels;
  const admits = (from: Record<string, string>) =>
    policies.some(
      (p) =>
        labelsMatch(p.spec.podSelector.matchLabels, mongoLabels) &&
        (p.spec.ingress ?? []).some(
          (r: Doc) => r.ports.some((x: Doc) => x.port === 27017) && r.from.some((f: Doc) => f.podSelector && labelsMatch(f.podSelector.matchLabels, from)),
        ),
    );
  assert.ok(admits(service0), "MongoDB admits the services");
  assert.ok(admits(job.spec.template.metadata.labels), "MongoDB admits the initiating Job");
  assert.not.ok(admits(docs.find((d) => d.kind === "Deployment" && d.metadata.name === "gateway")!.spec.template.metadata.labels), "the gateway has no way in");
});

test.run();
