import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";

const run = promisify(execFile);

/** The kustomize release the manifests are checked with when kubectl is not installed. */
const KUSTOMIZE = "sigs.k8s.io/kustomize/kustomize/v5@v5.5.0";

/**
 * Renders a kustomization directory with kustomize itself (kubectl's built-in one, else the
 * pinned release built by the Go toolchain from the module proxy), as `kubectl apply -k` would.
 */
export async function kustomize(dir: string): Promise<Record<string, any>[]> {
  const opts = { maxBuffer: 32 * 1024 * 1024 };
  let stdout: string;
  try {
    ({ stdout } = await run("kubectl", ["kustomize", dir], opts));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    ({ stdout } = await run("go", ["run", KUSTOMIZE, "build", dir], opts));
  }
  return parseAllDocuments(stdout).map((d) => d.toJS());
}

/**
 * Validates a rendered object against the Kubernetes API's OpenAPI schema of its kind
 * (kubernetes-models); throws naming the object and the offending field.
 */
export async function validateAgainstSchema(doc: Record<string, any>): Promise<void> {
  const mod = await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`).catch(() => {
    throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  });
  const Model = mod[doc.kind];
  // kustomize wraps a generated Secret's base64 at 70 columns, which the API server's decoder
  // skips (as Go's base64 does) but the schema's "byte" format does not.
  const data = doc.kind === "Secret" && doc.data ? Object.fromEntries(Object.entries(doc.data).map(([k, v]) => [k, String(v).replace(/\s/g, "")])) : doc.data;
  try {
    new Model({ ...doc, data }).validate();
  } catch (err) {
    throw new Error(`${doc.kind} ${doc.metadata?.name}: ${(err as Error).message}`);
  }
}
