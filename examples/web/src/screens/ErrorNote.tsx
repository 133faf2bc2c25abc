import { CombinedGraphQLErrors } from "@apollo/client";

import { codeOf } from "../apollo";

/** An error as the gateway words it: GraphQL errors carry `extensions.code` (and `field`). */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text = CombinedGraphQLErrors.is(error)
    ? error.errors.map((e) => `${e.message}${codeOf(e) ? ` (${codeOf(e)})` : ""}`).join("; ")
    : String((error as Error).message ?? error);
  return (
    <p className="error" role="alert">
      {text}
    </p>
  );
}
