import { useState } from "react";
import { ApiError, api, ok, type Issue } from "../api/client.ts";
import { Field, FormAlert, SecretOnce, Submit, submitted } from "../components.tsx";

const issueFor = (issues: Issue[], field: string) => issues.find((i) => i.path === `/${field}`)?.message;

export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [mode, setMode] = useState<"sign-in" | "create">("sign-in");

  const submit = submitted(async () => {
    setBusy(true);
    setError(null);
    // The key is checked with a request of its own before it is kept for the tab.
    const res = await api.GET("/api/v1/products", { headers: { authorization: `Bearer ${key.trim()}` } }).catch(() => null);
    setBusy(false);
    if (res?.response.ok) return onSignedIn(key.trim());
    if (!res) return setError("The service cannot be reached. Is it running?");
    const detail = (res.error as { detail?: string } | undefined)?.detail;
    const status = res.response.status;
    setError(
      status === 401
        ? `This key was refused: ${detail ?? "unknown key"}.`
        : status === 403
          ? "This key may only meter (scope ingest): the console needs an admin key of the product, the one POST /products gave or one made with scope admin."
          : status === 503
            ? "The service is unavailable; try again in a moment."
            : (detail ?? `Error ${status}`),
    );
  });

  return (
    <main className="signin" id="main">
      <div className="signin-box">
        <h1>
          <span className="logo" aria-hidden="true">◔</span> Meterline console
        </h1>
        {notice && (
          <p className="notice" role="status">
            {notice}
          </p>
        )}
        {mode === "sign-in" ? (
          <>
            <form onSubmit={submit} aria-label="Sign in">
              <Field label="Product API key" error={error ?? undefined} hint="An admin key of the product. Kept for this browser tab only; closing the tab or signing out forgets it.">
                {(id, describedBy) => (
                  <input id={id} aria-describedby={describedBy} type="password" autoComplete="off" spellCheck={false} placeholder="mk_…" value={key} onChange={(e) => setKey(e.target.value)} required />
                )}
              </Field>
              <Submit busy={busy} busyLabel="Checking…" disabled={!key.trim()}>
                Sign in
              </Submit>
            </form>
            <p className="muted">
              No product yet?{" "}
              <button type="button" className="link" onClick={() => setMode("create")}>
                Create a product
              </button>
            </p>
          </>
        ) : (
          <CreateProduct onUse={onSignedIn} onBack={() => setMode("sign-in")} />
        )}
      </div>
    </main>
  );
}

function CreateProduct({ onUse, onBack }: { onUse: (key: string) => void; onBack: () => void }) {
  const [form, setForm] = useState({ name: "", contact_name: "", contact_email: "" });
  const [issues, setIssues] = useState<Issue[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; api_key: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = submitted(async () => {
    setBusy(true);
    setError(null);
    setIssues([]);
    try {
      const product = await ok(
        api.POST("/api/v1/products", { body: { name: form.name, contact_name: form.contact_name || null, contact_email: form.contact_email || null } }),
      );
      setCreated({ name: product.name, api_key: product.api_key });
    } catch (err) {
      if (err instanceof ApiError) {
        setIssues(err.issues);
        setError(err.issues.length ? null : err.message);
      } else setError(String(err));
    } finally {
      setBusy(false);
    }
  });

  if (created)
    return (
      <div className="stack">
        <SecretOnce title={`API key of ${created.name}`} secret={created.api_key} warning="This key is shown once. Copy it now and keep it in a secret store: it cannot be shown again." />
        <button type="button" onClick={() => onUse(created.api_key)}>
          Continue to the console
        </button>
        <p className="muted">
          Next: define a plan and send usage; the console's quick start shows how.
        </p>
      </div>
    );

  return (
    <form onSubmit={submit} aria-label="Create a product" className="stack">
      <h2>Create a product</h2>
      <Field label="Product name" error={issueFor(issues, "name")}>
        {(id, d) => <input id={id} aria-describedby={d} value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required maxLength={255} />}
      </Field>
      <Field label="Contact name (optional)" error={issueFor(issues, "contact_name")}>
        {(id, d) => <input id={id} aria-describedby={d} value={form.contact_name} onChange={(e) => setForm({ ...form, contact_name: e.target.value })} />}
      </Field>
      <Field label="Contact email (optional)" error={issueFor(issues, "contact_email")}>
        {(id, d) => <input id={id} aria-describedby={d} type="email" value={form.contact_email} onChange={(e) => setForm({ ...form, contact_email: e.target.value })} />}
      </Field>
      {error && <FormAlert>{error}</FormAlert>}
      <div className="row">
        <Submit busy={busy} busyLabel="Creating…">
          Create product
        </Submit>
        <button type="button" className="secondary" onClick={onBack}>
          Back to sign in
        </button>
      </div>
    </form>
  );
}
