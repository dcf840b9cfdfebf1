import { useState } from "react";
import { ApiError } from "./api/client.ts";

/**
 * The API's field issues (a 422's `issues`) for a form: `issue(path)` says what the API found
 * wrong with a field, until the field is edited: what it then holds is not what was refused, and
 * a message beside it would blame the new value. `values` are the form's fields as they stand,
 * keyed as the API names them (a body field the form holds under another name, or derives,
 * given under the body's name); the values when the answer came are kept with it.
 */
export function useFieldIssues(error: unknown, values: object): (path: string) => string | undefined {
  const edited = useEditedSince(error, values);
  const issues = error instanceof ApiError ? error.issues : [];
  return (path) => {
    if (edited(path)) return undefined;
    const said = issues.filter((i) => i.path === `/${path}` || i.path.startsWith(`/${path}/`)).map((i) => i.message);
    return said.length > 0 ? said.join("; ") : undefined;
  };
}

/**
 * Whether a field was edited since `answer` came (an API error, the result of a check made on
 * submit): its value differs from the one it held then. `values` as for useFieldIssues.
 */
export function useEditedSince(answer: unknown, values: object): (path: string) => boolean {
  const [at, setAt] = useState<{ answer: unknown; values: object }>({ answer, values });
  // A new answer: the values it answered are the ones the form holds now (React's "adjusting
  // state when a prop changes": set during render, rendered again before anything is shown).
  if (at.answer !== answer) setAt({ answer, values });
  return (path) => at.answer === answer && valueOf(at.values, path) !== valueOf(values, path);
}

const valueOf = (values: object, path: string): unknown => (values as Record<string, unknown>)[path];
