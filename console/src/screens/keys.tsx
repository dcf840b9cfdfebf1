import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError, api, keyStore, ok, type ApiKey } from "../api/client.ts";
import { keysRead } from "../api/reads.ts";
import { useFieldIssues } from "../field-issues.ts";
import { Card, DataTable, DoneStatus, ErrorState, Field, FormAlert, Query, Screen, SecretOnce, Submit, submitted, Time } from "../components.tsx";

export function KeysScreen() {
  const keys = useQuery(keysRead());
  // The revoked key's row goes, and its button with it: the word that it went takes the focus.
  const [revoked, setRevoked] = useState<{ id: string; name: string } | null>(null);
  return (
    <Screen title="API keys">
    <div className="grid-side">
      <Card title="Keys">
        <Query q={keys} label="Loading keys">
          {(d) => {
            // As the service counts it: the last admin key that has not expired cannot be revoked.
            const liveAdmin = (x: ApiKey) => x.scope === "admin" && (x.expires_at === null || Date.parse(x.expires_at) > Date.now());
            const lastAdmin = d.keys.filter(liveAdmin).length === 1;
            return (
              <DataTable caption="API keys" columns={["Name", "Scope", "Prefix", "Created", "Last used", "Expires", { label: "Actions", hidden: true }]}>
                {d.keys.map((k) => (
                  <KeyRow key={k.id} k={k} lastAdmin={lastAdmin && liveAdmin(k)} onRevoked={() => setRevoked({ id: k.id, name: k.name })} />
                ))}
              </DataTable>
            );
          }}
        </Query>
        {revoked && <DoneStatus key={revoked.id}>Key {revoked.name} revoked: requests with it are refused within seconds.</DoneStatus>}
        <p className="hint">To rotate a key: create a new one, deploy it, then revoke the old one. A revoked key stops working within seconds. The last admin key cannot be revoked.</p>
      </Card>
      <CreateKey />
    </div>
    </Screen>
  );
}

function KeyRow({ k, lastAdmin, onRevoked }: { k: ApiKey; lastAdmin: boolean; onRevoked: () => void }) {
  const [confirm, setConfirm] = useState(false);
  // The key this console signed in with: revoking it signs this browser out at its next read.
  const mine = keyStore.get()?.startsWith(k.prefix) ?? false;
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => ok(api.DELETE("/api/v1/keys/{id}", { params: { path: { id: k.id } } })),
    onSuccess: () => {
      onRevoked();
      return queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  return (
    <tr>
      <td>
        {k.name} {mine && <span className="badge muted-badge">this console's key</span>}
      </td>
      <td>
        <span className={`badge ${k.scope === "admin" ? "warn" : "muted-badge"}`}>{k.scope}</span>
      </td>
      <td>
        <code>{k.prefix}…</code>
      </td>
      <td>
        <Time iso={k.created_at} />
      </td>
      <td>{k.last_used_at ? <Time iso={k.last_used_at} /> : "never"}</td>
      <td>{k.expires_at ? <Time iso={k.expires_at} /> : "never"}</td>
      <td>
        {lastAdmin ? (
          <small className="muted">the last admin key: create another admin key to revoke it</small>
        ) : !confirm ? (
          <button type="button" className="danger small" onClick={() => setConfirm(true)} aria-label={`Revoke key ${k.name}`}>
            Revoke…
          </button>
        ) : (
          <span className="confirm" role="group" aria-label={`Confirm revoking ${k.name}`}>
            <span>Revoke {k.name}? Requests with it are refused within seconds.{mine && " This console is signed in with it: revoking it signs you out."}</span>
            <button type="button" className="danger small" onClick={() => revoke.mutate()} autoFocus>
              Yes, revoke
            </button>{" "}
            <button type="button" className="secondary small" onClick={() => setConfirm(false)}>
              Keep
            </button>
          </span>
        )}
        {revoke.error && <ErrorState error={revoke.error} />}
      </td>
    </tr>
  );
}

function CreateKey() {
  const [form, setForm] = useState({ name: "", scope: "ingest" as "admin" | "ingest", expires: "" });
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/keys", { body: { name: form.name, scope: form.scope, expires_at: form.expires ? new Date(form.expires).toISOString() : null } })),
    onSuccess: (k) => {
      setCreated({ name: k.name, key: k.key });
      setForm({ name: "", scope: "ingest", expires: "" });
      queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  const err = create.error instanceof ApiError ? create.error : null;
  const issue = useFieldIssues(create.error, { name: form.name, scope: form.scope, expires_at: form.expires });
  const [unnamed, setUnnamed] = useState(false);
  const submit = submitted(() => {
    setCreated(null);
    // Said here, not as the schema's "must NOT have fewer than 1 characters".
    setUnnamed(form.name.trim() === "");
    if (form.name.trim() !== "") create.mutate();
  });
  return (
    <Card title="Create a key">
      {created && <SecretOnce title={`Key ${created.name}`} secret={created.key} warning="This key is shown once. Copy it now: it cannot be shown again." />}
      <form onSubmit={submit} noValidate className="stack" aria-label="Create a key">
        <Field label="Key name" error={unnamed ? "Required: a name that says where the key is used (e.g. production app)." : issue("name")}>
          {(id, d) => <input id={id} aria-describedby={d} value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />}
        </Field>
        <Field label="Scope" error={issue("scope")} hint="ingest: for client processes (sessions, usage, events, leases). admin: every route.">
          {(id, d) => (
            <select id={id} aria-describedby={d} value={form.scope} onChange={(e) => setForm({ ...form, scope: e.target.value as "admin" | "ingest" })}>
              <option value="ingest">ingest</option>
              <option value="admin">admin</option>
            </select>
          )}
        </Field>
        <Field label="Expires (optional)" error={issue("expires_at")}>
          {(id, d) => <input id={id} aria-describedby={d} type="datetime-local" value={form.expires} onChange={(e) => setForm({ ...form, expires: e.target.value })} />}
        </Field>
        {err && !err.issues.length && <FormAlert>{err.message}</FormAlert>}
        <Submit busy={create.isPending} busyLabel="Creating…">
          Create key
        </Submit>
      </form>
    </Card>
  );
}
