// A user's prepaid credits on the user's page, and a team's shared pool on the team's page (the
// same routes under /teams/{team_id}): the balance, the grants with their status (each voidable
// after a confirmation), a form to grant credits (confirmed before it is sent) and the ledger,
// newest first. Money is shown to the nano-dollar the service keeps.
import { useState } from "react";
import { useMutation, useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { ApiError, answer, api, ok, type CreditGrant, type LedgerEntry } from "../api/client.ts";
import { creditLedgerRead, creditsKey, creditsRead, LEDGER_PAGE_SIZES, ledgerLimit } from "../api/reads.ts";
import { Card, ConfirmBox, DataTable, DoneStatus, Empty, ErrorState, Field, FormAlert, FormStatus, ConfirmedSubmit, ListQuery, Loading, num, PerPage, Query, submitted, Time } from "../components.tsx";
import { describeGrant, grantBody, type Draws, LEDGER_TYPE, newGrantForm, STATUS_BADGE, voidable, type GrantForm, type GrantKind, type GrantStatus, type LedgerType } from "../credits.ts";
import { useFieldIssues } from "../field-issues.ts";
import { newId } from "../ids.ts";
import { fmtExactMoney, fmtSignedMoney } from "../format.ts";
import { usePaging, useUrlState } from "../url-state.ts";

const GRANTS_SHOWN = 25;
/** What a change of the balance makes stale: the credits, the ledger, and the bars whose cap includes the balance. */
const STALE = ["credits", "credit-ledger", "limits", "session"];
/** A team's pool also moves the team's bars (team:total_spend). */
const TEAM_STALE = ["team-limits", "team-member-sessions"];

/** Whose credits: a user's, or a team's shared pool (drawn after each member's own). */
export interface CreditOwner {
  kind: "user" | "team";
  id: string;
}

/** The credit routes of an owner: a user's and a team's take the same bodies and answer the same shapes. */
function routes(o: CreditOwner) {
  const user = { path: { user_id: o.id } };
  const team = { path: { team_id: o.id } };
  const isTeam = o.kind === "team";
  return {
    /** The cache key of this owner's queries (a user and a team of one id are apart). */
    key: creditsKey(o.kind, o.id),
    grant: (body: never) =>
      isTeam ? answer(api.POST("/api/v1/teams/{team_id}/credits", { params: team, body })) : answer(api.POST("/api/v1/users/{user_id}/credits", { params: user, body })),
    void: (grantId: string) =>
      isTeam
        ? ok(api.POST("/api/v1/teams/{team_id}/credits/{grant_id}/void", { params: { path: { team_id: o.id, grant_id: grantId } } }))
        : ok(api.POST("/api/v1/users/{user_id}/credits/{grant_id}/void", { params: { path: { user_id: o.id, grant_id: grantId } } })),
    /** Marks stale what a change of the balance moves. */
    stale(queryClient: QueryClient) {
      for (const k of STALE) queryClient.invalidateQueries({ queryKey: [k, this.key] });
      if (isTeam) for (const k of TEAM_STALE) queryClient.invalidateQueries({ queryKey: [k, o.id] });
    },
  };
}

/** `draws`: whether the owner's plan draws credits (drawsCredits: credits_enabled and a period cap), or undefined while it loads. */
export function UserCredits({ id, draws, kind = "user" }: { id: string; draws: Draws | undefined; kind?: CreditOwner["kind"] }) {
  const credits = useQuery(creditsRead(kind, id));
  const [opened, setOpened] = useState(false);
  const noun = kind === "team" ? "team" : "user";
  const title = kind === "team" ? "Credits (the team's pool, drawn after each member's own)" : "Credits";
  const why =
    draws === false ? (
      <>This {noun}'s plan does not draw credits (its credits_enabled is off): grants are kept, and drawn once the plan turns credits on.</>
    ) : draws === "no plan" ? (
      <>This {noun} has no plan: grants are kept, and drawn once the {noun} is on a plan that draws credits.</>
    ) : draws === "no cap" ? (
      <>This {noun}'s plan has credits_enabled but no period cap (max_spend_per_period): with no allowance to go beyond, nothing is ever drawn. Grants are kept, and drawn once the plan has a period cap.</>
    ) : null;
  // Nothing drawn and nothing held: one line, not a balance, a form and a ledger that bury the spend.
  const idle = why !== null && credits.data !== undefined && credits.data.grants.length === 0 && credits.data.overdraft === 0;
  // Until the plan and the balance are both known, nothing of the form: shown and then folded into one line, it
  // would jump under the reader's pointer.
  if (!opened && (draws === undefined || (why !== null && credits.data === undefined)))
    return (
      <Card title={title}>
        <Query q={credits} label="Loading credits">
          {() => <Loading label="Loading credits" />}
        </Query>
      </Card>
    );
  if (idle && !opened)
    return (
      <Card title={title}>
        <p className="notice">
          {why}{" "}
          <button type="button" className="link" onClick={() => setOpened(true)}>
            Grant credits anyway…
          </button>
        </p>
      </Card>
    );
  return (
    <>
      <Card title={title}>
        {why && <p className="notice">{why}</p>}
        <Query q={credits} label="Loading credits">
          {(c) => (
            <>
              <div className="cards compact credit-figures">
                <div className="kv">
                  <span>Balance</span>
                  <strong className={c.balance < 0 ? "bad-text" : undefined}>{fmtExactMoney(c.balance)}</strong>
                </div>
                <div className="kv">
                  <span>Pending (not yet effective)</span>
                  <strong>{fmtExactMoney(c.pending)}</strong>
                </div>
                {c.overdraft > 0 && (
                  <div className="kv">
                    <span>Overdraft (paid first by the next grant)</span>
                    <strong className="bad-text">{fmtExactMoney(c.overdraft)}</strong>
                  </div>
                )}
                {c.low_at != null && (
                  <div className="kv">
                    <span>Low below (credits.low)</span>
                    <strong>{fmtExactMoney(c.low_at)}</strong>
                  </div>
                )}
              </div>
              <Grants owner={{ kind, id }} grants={c.grants} />
            </>
          )}
        </Query>
      </Card>
      <div className="grid-2">
        <GrantCredits owner={{ kind, id }} />
        <CreditLedger owner={{ kind, id }} hasAny={credits.data ? credits.data.grants.length > 0 || credits.data.overdraft > 0 : credits.isError ? true : undefined} />
      </div>
    </>
  );
}

function Grants({ owner, grants }: { owner: CreditOwner; grants: CreditGrant[] }) {
  const [all, setAll] = useState(false);
  const [voiding, setVoiding] = useState<CreditGrant | null>(null);
  const queryClient = useQueryClient();
  const r = routes(owner);
  const voidGrant = useMutation({
    mutationFn: (g: CreditGrant) => r.void(g.id),
    onSuccess: () => {
      setVoiding(null);
      r.stale(queryClient);
    },
  });
  if (grants.length === 0) return <Empty>No grants yet. Grant credits below: a payment's id as the grant's id makes a retried top-up safe.</Empty>;
  const shown = all ? grants : grants.slice(0, GRANTS_SHOWN);
  return (
    <>
      {voiding && (
        <ConfirmBox key={voiding.id} name="Confirm the void" yes="Yes, void it" busyYes="Voiding…" busy={voidGrant.isPending} no="Keep it" onYes={() => voidGrant.mutate(voiding)} onNo={() => setVoiding(null)}>
          Void grant <code>{voiding.id}</code>? Its remaining {fmtExactMoney(voiding.remaining)} leaves the balance for good
          {voiding.status === "pending" ? " (it is not effective yet)" : ""}.
        </ConfirmBox>
      )}
      {voidGrant.error && <ErrorState error={voidGrant.error} />}
      {voidGrant.isSuccess && !voiding && (
        <DoneStatus key={voidGrant.data.id}>
          Grant {voidGrant.data.id} voided{voidGrant.variables.remaining > 0 ? `: ${fmtExactMoney(voidGrant.variables.remaining)} left the balance` : ""}.
        </DoneStatus>
      )}
      <DataTable
        caption="Credit grants, newest first"
        columns={["Grant", "Status", "Kind", num("Priority"), num("Amount"), num("Remaining"), "Effective", "Expires", "Description", { label: "Actions", hidden: true }]}
      >
        {shown.map((g) => (
          <tr key={g.id}>
            <td>
              <code className="grant-id" title={g.id}>
                {g.id}
              </code>
            </td>
            <td>
              <span className={`badge ${STATUS_BADGE[g.status as GrantStatus] ?? "muted-badge"}`}>{g.status}</span>
            </td>
            <td>{g.kind}</td>
            <td className="num">{g.priority}</td>
            <td className="num">{fmtExactMoney(g.amount)}</td>
            <td className="num">{fmtExactMoney(g.remaining)}</td>
            <td>
              <Time iso={g.effective_at} />
            </td>
            <td>{g.expires_at ? <Time iso={g.expires_at} /> : "never"}</td>
            <td className="wrap">{g.description ?? ""}</td>
            <td>
              {voidable(g.status) && (
                <button
                  type="button"
                  className="danger small"
                  aria-label={`Void grant ${g.id}`}
                  onClick={() => {
                    voidGrant.reset();
                    setVoiding(g);
                  }}
                >
                  Void…
                </button>
              )}
            </td>
          </tr>
        ))}
      </DataTable>
      {grants.length > GRANTS_SHOWN && (
        <button type="button" className="secondary" onClick={() => setAll(!all)}>
          {all ? `Show the newest ${GRANTS_SHOWN}` : `Show all ${grants.length} grants`}
        </button>
      )}
    </>
  );
}

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;

function GrantCredits({ owner }: { owner: CreditOwner }) {
  const [form, setForm] = useState<GrantForm>(() => newGrantForm(newId()));
  const [confirming, setConfirming] = useState(false);
  const queryClient = useQueryClient();
  const r = routes(owner);
  const grant = useMutation({
    mutationFn: (f: GrantForm) => r.grant(grantBody(f) as never),
    onSuccess: () => {
      r.stale(queryClient);
      setForm(newGrantForm(newId()));
    },
    onSettled: () => setConfirming(false),
  });
  const err = grant.error instanceof ApiError ? grant.error : null;
  const refused = useFieldIssues(grant.error, form);
  // An amount that is no number above 0 is said before the question is asked: "Grant \"\" of paid credits?" asked nothing.
  const [amountProblem, setAmountProblem] = useState<string | undefined>();
  const issue = (f: string) => (f === "amount" ? amountProblem : undefined) ?? refused(f);
  // Editing after the question was asked takes the question back: what is confirmed is what is sent.
  const edit = (patch: Partial<GrantForm>) => {
    setConfirming(false);
    if ("amount" in patch) setAmountProblem(undefined);
    setForm({ ...form, ...patch });
  };
  const ask = () => {
    const amount = Number(form.amount.trim());
    if (form.amount.trim() === "" || !Number.isFinite(amount) || amount <= 0) return setAmountProblem("Required: an amount in dollars, more than 0 (e.g. 20 or 4.99).");
    setConfirming(true);
  };
  const input = (k: "id" | "amount" | "priority" | "description", label: string, hint?: string, inputMode?: "decimal" | "numeric") => (
    <Field label={label} error={issue(k)} hint={hint}>
      {(fid, d) => <input id={fid} aria-describedby={d} inputMode={inputMode} value={form[k]} aria-invalid={!!issue(k)} onChange={(e) => edit({ [k]: e.target.value })} />}
    </Field>
  );
  const date = (k: "effective_at" | "expires_at", label: string, hint: string) => (
    <Field label={label} error={issue(k)} hint={hint}>
      {(fid, d) => <input id={fid} aria-describedby={d} type="datetime-local" value={form[k]} aria-invalid={!!issue(k)} onChange={(e) => edit({ [k]: e.target.value })} />}
    </Field>
  );
  return (
    <Card title="Grant credits">
      <form className="stack" noValidate aria-label="Grant credits" onSubmit={submitted(() => (confirming ? grant.mutate(form) : ask()))}>
        {input("id", "Grant id", "A fresh id; use the payment's id instead, so that a retried top-up is granted once.")}
        <div className="row top">
          {input("amount", "Amount ($)", undefined, "decimal")}
          <Field label="Kind" error={issue("kind")}>
            {(fid, d) => (
              <select id={fid} aria-describedby={d} value={form.kind} onChange={(e) => edit({ kind: e.target.value as GrantKind })}>
                <option value="paid">paid</option>
                <option value="promotional">promotional</option>
              </select>
            )}
          </Field>
          {input("priority", "Priority", "0-100, lower is drawn first; default 50.", "numeric")}
        </div>
        <div className="row top">
          {date("effective_at", "Effective from (optional)", `Empty: now. In your time zone (${zone}).`)}
          {date("expires_at", "Expires at (optional)", "Empty: never. What is left then expires.")}
        </div>
        {input("description", "Description (optional)")}
        {err && !err.issues.length && <FormAlert>The API refused the grant ({err.status}): {err.message}</FormAlert>}
        {err && err.issues.length > 0 && (Object.keys(form).some(issue) || err.issues.some((i) => !(i.path.split("/")[1]! in form))) && (
          <FormAlert>The API refused the grant ({err.status}): fix the fields marked above.</FormAlert>
        )}
        {grant.isSuccess && (
          <FormStatus>
            {grant.data.status === 201
              ? `Granted ${fmtExactMoney(grant.data.data.amount)} as grant ${grant.data.data.id}.`
              : `Grant ${grant.data.data.id} was given before with these fields: nothing changed.`}
          </FormStatus>
        )}
        <ConfirmedSubmit
          confirming={confirming}
          name="Confirm the grant"
          question={describeGrant(form, owner.kind === "team" ? `team ${owner.id}` : owner.id)}
          label="Grant credits…"
          yes="Yes, grant"
          busy={grant.isPending}
          busyLabel="Granting…"
          onBack={() => setConfirming(false)}
        />
      </form>
    </Card>
  );
}

function CreditLedger({ owner, hasAny }: { owner: CreditOwner; hasAny: boolean | undefined }) {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set, "lcursor");
  const limit = ledgerLimit(params);
  // A user without grants (nor overdraft) has no ledger: not asked (a fresh document's first page may be on its way already, arrival.ts).
  const ledger = useQuery({ ...creditLedgerRead(owner.kind, owner.id, limit, paging.cursor), enabled: hasAny === true || paging.cursor !== undefined });
  return (
    <Card title="Credit ledger" actions={<PerPage value={limit} sizes={LEDGER_PAGE_SIZES} onChange={(size) => set({ llimit: size === "25" ? null : size, ...paging.reset })} />}>
      {hasAny === false && paging.cursor === undefined ? (
        <Empty>No credit movements yet.</Empty>
      ) : (
        <ListQuery q={ledger} label="Loading the ledger" items={(page) => page.entries} pages={{ paging, next: (page) => page.next_cursor, order: "newest first" }} empty="No credit movements yet.">
          {(entries, page) => (
            <>
              <p className="hint">Newest first. Usage is summed per grant per hour: an entry's time is its hour.</p>
              <DataTable caption="Credit ledger, newest first" columns={["Time", "Type", num("Amount"), "Grant", num("Balance after")]} paging={paging} next={page.next_cursor}>
                {entries.map((e: LedgerEntry, i: number) => (
                  <tr key={`${e.at}|${e.type}|${e.grant_id ?? "-"}|${i}`}>
                    <td>
                      <Time iso={e.at} />
                    </td>
                    <td>{LEDGER_TYPE[e.type as LedgerType] ?? e.type}</td>
                    <td className={`num ${e.amount < 0 ? "bad-text" : "good-text"}`}>{fmtSignedMoney(e.amount)}</td>
                    <td>
                      {e.grant_id ? (
                        <code className="grant-id" title={e.grant_id}>
                          {e.grant_id}
                        </code>
                      ) : (
                        "—"
                      )}
                    </td>
                    <td className="num">{fmtExactMoney(e.balance_after)}</td>
                  </tr>
                ))}
              </DataTable>
            </>
          )}
        </ListQuery>
      )}
    </Card>
  );
}
