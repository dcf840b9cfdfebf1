import { useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useLocation } from "wouter";
import { ApiError } from "../api/client.ts";
import { Card, Field, FormAlert, Submit, submitted } from "../components.tsx";
import { useFieldIssues } from "../field-issues.ts";

/**
 * The form that creates a user or a team from your product's id for it and a name; once created,
 * the `list` query is refreshed and the new one's page (`href`) opens.
 */
export function CreateForm<T>({ noun, nameLabel, nameRequired = false, create, list, href }: { noun: "user" | "team"; nameLabel: string; nameRequired?: boolean; create: (externalId: string, name: string) => Promise<T>; list: string; href: (created: T) => string }) {
  const idField = `external_${noun}_id`;
  const [form, setForm] = useState({ externalId: "", name: "" });
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: () => create(form.externalId, form.name),
    onSuccess: (created) => {
      queryClient.invalidateQueries({ queryKey: [list] });
      navigate(href(created));
    },
  });
  const issue = useFieldIssues(mutation.error, { [idField]: form.externalId, name: form.name });
  const refusedFields = mutation.error instanceof ApiError && mutation.error.issues.length > 0;
  return (
    <Card title={`Create a ${noun}`}>
      <form onSubmit={submitted(() => mutation.mutate())} className="stack" aria-label={`Create a ${noun}`}>
        <Field label={`External ${noun} id`} error={issue(idField)} hint={`Your product's own id for the ${noun} (1-255 characters).`}>
          {(id, d) => <input id={id} aria-describedby={d} value={form.externalId} onChange={(e) => setForm({ ...form, externalId: e.target.value })} required />}
        </Field>
        <Field label={nameLabel} error={issue("name")}>
          {(id, d) => <input id={id} aria-describedby={d} value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required={nameRequired} />}
        </Field>
        {mutation.error && !refusedFields && <FormAlert>{mutation.error instanceof ApiError && mutation.error.status === 409 ? `A ${noun} with this id exists already.` : mutation.error.message}</FormAlert>}
        <Submit busy={mutation.isPending} busyLabel="Creating…">
          Create {noun}
        </Submit>
      </form>
    </Card>
  );
}
