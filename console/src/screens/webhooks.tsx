import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useLocation } from "wouter";
import { useHistoryState } from "wouter/use-browser-location";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "@meter/rules";
import { ApiError, api, ok, type Endpoint } from "../api/client.ts";
import { endpointsRead } from "../api/reads.ts";
import { Card, ConfirmBox, CopyButton, DataTable, DoneStatus, ErrorState, Field, FormAlert, FormStatus, ListQuery, num, QuickStart, Screen, SecretOnce, Submit, submitted, Time } from "../components.tsx";
import { usePaging, useUrlState } from "../url-state.ts";

const ep = (id: string) => ({ params: { path: { id } } });

const ENDPOINT_FIELDS = ["url", "description", "subscribed_events"] as const;
type EndpointField = (typeof ENDPOINT_FIELDS)[number];

/**
 * An endpoint form's refusal, by field: the 422's issues by path; a 400 without issues names its
 * field first ("subscribed_events must …", "description must …"), and the others are the URL's
 * ("url must use https …", "host … does not resolve"), the one field the service checks beyond
 * its shape. Anything else (unreachable, 429, 500, a limit of the product) is the form's: `form`.
 */
function fieldErrors(err: ApiError | null): ((field: EndpointField) => string | undefined) & { form?: string } {
  const issues = err?.issues ?? [];
  const refusal = err && issues.length === 0 ? err.message : undefined;
  // The field a refusal without issues is about, if any.
  const owner = refusal === undefined ? undefined : (ENDPOINT_FIELDS.find((f) => refusal.startsWith(f)) ?? (err!.status === 400 ? "url" : undefined));
  const onField = (field: EndpointField) =>
    issues.filter((i) => i.path.startsWith(`/${field}`)).map((i) => i.message).join("; ") || (owner === field ? refusal : undefined);
  const unplaced = refusal !== undefined ? (owner === undefined ? refusal : "") : issues.filter((i) => !ENDPOINT_FIELDS.some((f) => i.path.startsWith(`/${f}`))).map((i) => i.message).join("; ");
  return Object.assign(onField, unplaced ? { form: unplaced } : {});
}

export function WebhooksScreen({ selected }: { selected?: string }) {
  const endpoints = useQuery(endpointsRead());
  const current = endpoints.data?.find((e) => e.id === selected);
  // An endpoint deleted from its page comes back here with its URL (EndpointDetail's navigation),
  // said once: the history entry forgets it, so Back and Forward do not say it again.
  const said = useHistoryState<{ deleted?: string } | null>()?.deleted;
  const [deleted, setDeleted] = useState(said);
  useEffect(() => {
    if (!said) return;
    setDeleted(said);
    window.history.replaceState(null, "");
  }, [said]);
  // Opening an endpoint moves on from it.
  useEffect(() => {
    if (selected) setDeleted(undefined);
  }, [selected]);
  return (
    <Screen title="Webhooks">
    <div className="grid-side">
      <Card title="Endpoints">
        {deleted && !selected && <DoneStatus key={deleted}>Endpoint {deleted} deleted, with its delivery log.</DoneStatus>}
        <ListQuery q={endpoints} label="Loading endpoints" items={(all) => all} empty={<>No endpoints. Add one to receive gate, threshold and summary events, signed with its secret; see the <QuickStart />.</>}>
          {(list) => (
            <ul className="list">
              {list.map((e) => (
                <li key={e.id} className={e.id === selected ? "selected" : ""}>
                  <Link href={`/webhooks/${e.id}`} aria-current={e.id === selected ? "true" : undefined}>
                    <span className="url">{e.url}</span>
                  </Link>
                  <span className={`badge ${e.enabled ? "good" : "muted-badge"}`}>{e.enabled ? "enabled" : "disabled"}</span>
                  <small className="muted">{e.description ?? `${e.subscribed_events.length} event ${e.subscribed_events.length === 1 ? "type" : "types"}`}</small>
                </li>
              ))}
            </ul>
          )}
        </ListQuery>
      </Card>
      <CreateEndpoint />
    </div>
    {selected && (current ? <EndpointDetail key={current.id} endpoint={current} /> : endpoints.data && <ErrorState error={new ApiError(404, "no such endpoint")} />)}
    </Screen>
  );
}

function EventPicker({ value, onChange, legend }: { value: WebhookEventType[]; onChange: (v: WebhookEventType[]) => void; legend: string }) {
  return (
    <fieldset className="events">
      <legend>{legend}</legend>
      {WEBHOOK_EVENT_TYPES.map((t) => (
        <label key={t} className="check">
          <input type="checkbox" checked={value.includes(t)} onChange={(e) => onChange(e.target.checked ? [...value, t] : value.filter((x) => x !== t))} /> {t}
        </label>
      ))}
    </fieldset>
  );
}

function CreateEndpoint() {
  const [form, setForm] = useState({ url: "", description: "", events: ["gate_event.hard_gate", "usage.threshold.80", "usage.threshold.100"] as WebhookEventType[] });
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/webhooks/endpoints", { body: { url: form.url, subscribed_events: form.events, description: form.description || null } })),
    onSuccess: (e) => {
      setSecret({ url: e.url, secret: e.secret });
      setForm({ ...form, url: "", description: "" });
      queryClient.invalidateQueries({ queryKey: ["endpoints"] });
    },
  });
  const err = create.error instanceof ApiError ? create.error : null;
  const issue = fieldErrors(err);
  const submit = submitted(() => {
    setSecret(null);
    create.mutate();
  });
  return (
    <Card title="Add an endpoint">
      {secret && <SecretOnce title={`Signing secret of ${secret.url}`} secret={secret.secret} warning="Shown once here; you can reveal it again later from the endpoint. Verify every delivery's X-Service-Signature with it." />}
      <form onSubmit={submit} noValidate className="stack" aria-label="Add an endpoint">
        <Field label="URL" error={issue("url")}>
          {(id, d) => <input id={id} aria-describedby={d} type="url" placeholder="https://example.com/hooks/meter" value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} />}
        </Field>
        <Field label="Description (optional)" error={issue("description")}>
          {(id, d) => <input id={id} aria-describedby={d} value={form.description} onChange={(e) => setForm({ ...form, description: e.target.value })} />}
        </Field>
        <EventPicker legend="Events" value={form.events} onChange={(events) => setForm({ ...form, events })} />
        {issue("subscribed_events") && <small className="field-error">{issue("subscribed_events")}</small>}
        {issue.form && <FormAlert>{issue.form}</FormAlert>}
        {create.error && !(create.error instanceof ApiError) && <ErrorState error={create.error} />}
        <Submit busy={create.isPending} busyLabel="Adding…">
          Add endpoint
        </Submit>
      </form>
    </Card>
  );
}

function EndpointDetail({ endpoint }: { endpoint: Endpoint }) {
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const [form, setForm] = useState({ url: endpoint.url, description: endpoint.description ?? "", events: endpoint.subscribed_events });
  const [secret, setSecret] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [confirmRotate, setConfirmRotate] = useState(false);
  const [confirmDisable, setConfirmDisable] = useState(false);
  const [confirmSave, setConfirmSave] = useState(false);
  // Event types the edit would unsubscribe from: their pending deliveries end (asked first).
  const dropping = endpoint.subscribed_events.filter((t) => !form.events.includes(t));
  // A secret revealed or rotated takes the focus: the confirmation that asked for it is gone, and the secret is what is wanted next.
  const secretShown = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (secret) secretShown.current?.focus();
  }, [secret]);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["endpoints"] });
  const update = useMutation({
    mutationFn: (body: { url?: string; description?: string | null; subscribed_events?: WebhookEventType[]; enabled?: boolean }) => ok(api.PATCH("/api/v1/webhooks/endpoints/{id}", { ...ep(endpoint.id), body })),
    onSuccess: refresh,
    onSettled: () => setConfirmSave(false),
  });
  const save = () => update.mutate({ url: form.url, description: form.description || null, subscribed_events: form.events });
  // Apart from the edit form's save: turning deliveries off is no edit of the form, and says so where it was asked.
  const toggle = useMutation({
    mutationFn: (enabled: boolean) => ok(api.PATCH("/api/v1/webhooks/endpoints/{id}", { ...ep(endpoint.id), body: { enabled } })),
    onSuccess: refresh,
  });
  const reveal = useMutation({ mutationFn: () => ok(api.GET("/api/v1/webhooks/endpoints/{id}/secret", ep(endpoint.id))), onSuccess: (s) => setSecret(s.secret) });
  const rotate = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/webhooks/endpoints/{id}/rotate-secret", ep(endpoint.id))),
    onSuccess: (s) => {
      setSecret(s.secret);
      setConfirmRotate(false);
    },
  });
  const test = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/webhooks/endpoints/{id}/test", ep(endpoint.id))),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["deliveries", endpoint.id] }),
  });
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/api/v1/webhooks/endpoints/{id}", ep(endpoint.id))),
    onSuccess: () => {
      refresh();
      navigate("/webhooks", { state: { deleted: endpoint.url } });
    },
  });
  const err = update.error instanceof ApiError ? update.error : null;
  const issue = fieldErrors(err);
  return (
    <div className="grid-2">
      <Card title={`Endpoint ${endpoint.url}`}>
        <p className="muted">
          <span className={`badge ${endpoint.enabled ? "good" : "muted-badge"}`}>{endpoint.enabled ? "enabled" : "disabled"}</span>{" "}
          {endpoint.enabled ? "Subscribed events are delivered." : "Nothing is delivered until it is enabled again; deliveries that were waiting for a retry when it was disabled ended as failed."} Created <Time iso={endpoint.created_at} />
        </p>
        <div className="row wrap">
          <button type="button" className="secondary" onClick={() => (endpoint.enabled ? setConfirmDisable(true) : toggle.mutate(true))} disabled={toggle.isPending || confirmDisable}>
            {endpoint.enabled ? "Disable…" : "Enable"}
          </button>
          <button type="button" className="secondary" onClick={() => test.mutate()} disabled={test.isPending}>
            {test.isPending ? "Sending…" : "Send a test event"}
          </button>
          <button type="button" className="secondary" onClick={() => reveal.mutate()}>
            Reveal secret
          </button>
          <button type="button" className="secondary" onClick={() => setConfirmRotate(true)} disabled={confirmRotate}>
            Rotate secret…
          </button>
          <button type="button" className="danger" onClick={() => setConfirmDelete(true)} disabled={confirmDelete}>
            Delete…
          </button>
        </div>
        {confirmDisable && (
          <ConfirmBox
            name="Confirm disabling"
            yes="Yes, disable"
            busyYes="Disabling…"
            busy={toggle.isPending}
            no="Keep it enabled"
            onYes={() => toggle.mutate(false, { onSettled: () => setConfirmDisable(false) })}
            onNo={() => setConfirmDisable(false)}
          >
            Disable this endpoint? Nothing is delivered to it until it is enabled again, and its deliveries waiting for a retry end as failed: enabling it again does not send them.
          </ConfirmBox>
        )}
        {confirmRotate && (
          <ConfirmBox name="Confirm the rotation" yes="Yes, rotate" busyYes="Rotating…" busy={rotate.isPending} no="Keep the current secret" onYes={() => rotate.mutate()} onNo={() => setConfirmRotate(false)}>
            Rotate the signing secret? The current one stops verifying deliveries at once: update your receiver with the new one.
          </ConfirmBox>
        )}
        {confirmDelete && (
          <ConfirmBox name="Confirm deletion" yes="Yes, delete" busyYes="Deleting…" busy={remove.isPending} no="Keep it" onYes={() => remove.mutate()} onNo={() => setConfirmDelete(false)}>
            Delete this endpoint and its delivery log?
          </ConfirmBox>
        )}
        {test.data && (
          <p role="status" className={test.data.success ? "ok-text" : "field-error"}>
            Test {test.data.success ? "succeeded" : "failed"}: {test.data.status_code ? `status ${test.data.status_code}` : (test.data.error ?? "no answer")} in {test.data.response_time_ms} ms.
          </p>
        )}
        {test.error && <ErrorState error={test.error} />}
        {(toggle.error || rotate.error || reveal.error || remove.error) && <ErrorState error={toggle.error ?? rotate.error ?? reveal.error ?? remove.error} />}
        {secret && (
          <div className="secret-row" role="region" aria-label="Signing secret" tabIndex={-1} ref={secretShown}>
            <code>{secret}</code>
            <CopyButton text={secret} />
            {rotate.isSuccess && <span className="warning">New secret: the previous one no longer verifies.</span>}
          </div>
        )}
        <form
          className="stack"
          noValidate
          aria-label="Edit the endpoint"
          onSubmit={submitted(() => (dropping.length > 0 ? setConfirmSave(true) : save()))}
        >
          <Field label="Endpoint URL" error={issue("url")}>
            {(id, d) => <input id={id} aria-describedby={d} type="url" value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} />}
          </Field>
          <Field label="Endpoint description" error={issue("description")}>
            {(id, d) => <input id={id} aria-describedby={d} value={form.description} onChange={(e) => setForm({ ...form, description: e.target.value })} />}
          </Field>
          <EventPicker legend="Subscribed events" value={form.events} onChange={(events) => setForm({ ...form, events })} />
          {issue("subscribed_events") && <small className="field-error">{issue("subscribed_events")}</small>}
          {issue.form && <FormAlert>{issue.form}</FormAlert>}
          {update.error && !(update.error instanceof ApiError) && <ErrorState error={update.error} />}
          {update.isSuccess && <FormStatus>Saved.</FormStatus>}
          {dropping.length > 0 && confirmSave ? (
            <ConfirmBox name="Confirm the unsubscription" yes="Yes, save" busyYes="Saving…" busy={update.isPending} no="Keep editing" onYes={save} onNo={() => setConfirmSave(false)}>
              Stop delivering {dropping.join(", ")}? Their deliveries waiting for a retry end as failed, and subscribing again does not send them.
            </ConfirmBox>
          ) : (
            <button type="submit" disabled={update.isPending}>
              Save endpoint
            </button>
          )}
        </form>
      </Card>
      <Deliveries id={endpoint.id} />
    </div>
  );
}

function Deliveries({ id }: { id: string }) {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set);
  const status = (params.get("status") as "success" | "failed" | "pending" | null) ?? undefined;
  const deliveries = useQuery({
    queryKey: ["deliveries", id, status, paging.cursor],
    queryFn: () => ok(api.GET("/api/v1/webhooks/endpoints/{id}/deliveries", { params: { path: { id }, query: { status, cursor: paging.cursor, limit: 25 } } })),
  });
  return (
    <Card
      title="Delivery log"
      actions={
        <Field label="Delivery status">
          {(fid) => (
            <select id={fid} value={status ?? ""} onChange={(e) => set({ status: e.target.value || null, ...paging.reset })}>
              <option value="">All</option>
              <option value="success">Success</option>
              <option value="failed">Failed</option>
              <option value="pending">Pending</option>
            </select>
          )}
        </Field>
      }
    >
      <ListQuery q={deliveries} label="Loading deliveries" items={(page) => page.deliveries} pages={{ paging, next: (page) => page.next_cursor, order: "newest first" }} empty={<>No deliveries{status ? ` with status ${status}` : ""}. Each event the endpoint subscribes to is logged here when sent; a test event is answered at once and not logged.</>}>
        {(list, page) => (
          <DataTable caption="Deliveries, newest first" columns={["Created", "Event", "Status", num("Code"), num("Attempt"), "Completed"]} paging={paging} next={page.next_cursor}>
            {list.map((d) => (
              <tr key={d.id}>
                <td>
                  <Time iso={d.created_at} />
                </td>
                <td>
                  {d.event_type}
                  <br />
                  <code className="muted event-id" title="The envelope's id: the receiver's X-Service-Delivery header">
                    {d.event_id}
                  </code>
                </td>
                <td>
                  <span className={`badge ${d.status === "success" ? "good" : d.status === "failed" ? "bad" : "warn"}`}>{d.status}</span>
                  {d.last_error && <small className="field-error delivery-error">{d.last_error}</small>}
                </td>
                <td className="num">{d.status_code || "—"}</td>
                <td className="num">{d.attempt}</td>
                <td>
                  <Time iso={d.completed_at} />
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </ListQuery>
    </Card>
  );
}
