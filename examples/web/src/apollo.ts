// The Apollo Client a signed-in (or signed-out) page uses: queries and mutations over HTTP,
// uploads as GraphQL multipart requests, subscriptions over graphql-ws, and a plain
// InMemoryCache: every object has a globally unique `id`, so no typePolicies are needed.
import { ApolloClient, ApolloLink, CombinedGraphQLErrors, InMemoryCache } from "@apollo/client";
import { RetryLink } from "@apollo/client/link/retry";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition } from "@apollo/client/utilities";
import UploadHttpLink from "apollo-upload-client/UploadHttpLink.mjs";
import { createClient } from "graphql-ws";
import type { GraphQLFormattedError } from "graphql";
import { type Observable, catchError, mergeMap, of } from "rxjs";

import type { ErrorCode } from "./gql/errors";

/** The API: the page's own origin unless VITE_GRAPHQL_URL names another (see the README on CORS). */
export const GRAPHQL_URL = new URL(import.meta.env.VITE_GRAPHQL_URL ?? "/graphql", window.location.href);

/** An error's `extensions.code`, one of the schema's `ErrorCode` values. */
export const codeOf = (error: GraphQLFormattedError) => error.extensions?.code as ErrorCode | undefined;

/** A URL the API handed out (`Attachment.url` is a path unless the gateway knows its public URL). */
export const apiUrl = (url: string) => new URL(url, GRAPHQL_URL).href;

/**
 * Subscriptions that take `after` (`messageReceived`, `roomMessages`) resume where they stopped.
 * Each event's `id` becomes the operation's `after`, so when RetryLink subscribes again after the
 * socket dropped, the gateway first replays what was stored after the last event this page got,
 * oldest first, then goes live: nothing missed, nothing twice. When more was missed than the
 * gateway replays (500), it refuses `after`; then the lists on screen are fetched again (their
 * first pages are the newest) and the subscription goes live from now.
 */
const resume = new ApolloLink((operation, forward) => {
  if (!("after" in operation.variables)) return forward(operation);
  const fromNow = () => {
    operation.variables = { ...operation.variables, after: null };
    void operation.client.refetchQueries({ include: "active" });
    return subscribe();
  };
  const subscribe = (): Observable<ApolloLink.Result> =>
    forward(operation).pipe(
      mergeMap((result) => {
        if (refusesAfter(result.errors)) return fromNow();
        const event = result.data && Object.values(result.data)[0];
        if (event && typeof event === "object" && "id" in event) {
          operation.variables = { ...operation.variables, after: event.id };
        }
        return of(result);
      }),
      catchError((error: unknown) => {
        if (CombinedGraphQLErrors.is(error) && refusesAfter(error.errors)) return fromNow();
        throw error;
      }),
    );
  return subscribe();
});

const refusesAfter = (errors?: readonly GraphQLFormattedError[]) =>
  errors?.some((error) => codeOf(error) === "BAD_USER_INPUT" && error.extensions?.field === "after");

/** Subscribe again, after a growing pause, whenever the socket is lost; GraphQL errors are final. */
const retry = new RetryLink({
  delay: { initial: 300, max: 3000, jitter: true },
  attempts: { max: Infinity, retryIf: (error) => !CombinedGraphQLErrors.is(error) },
});

const isSubscription = ({ query }: ApolloLink.Operation) => {
  const definition = getMainDefinition(query);
  return definition.kind === "OperationDefinition" && definition.operation === "subscription";
};

/** A client for one session (or none); `dispose` closes its socket. `onSessionEnded` runs when
 * the gateway closes the socket with 4403: the token was revoked (signed out elsewhere) or expired. */
export function makeClient(token: string | null, onSessionEnded: () => void) {
  const authorization = token ? `Bearer ${token}` : undefined;
  const http = new UploadHttpLink({
    uri: GRAPHQL_URL.href,
    headers: {
      ...(authorization && { authorization }),
      // The gateway takes multipart (upload) requests only with this header, which a cross-site
      // form cannot send, so an upload is never a CSRF "simple request". Harmless on the others.
      "GraphQL-Preflight": "1",
    },
  });
  const socket = createClient({
    url: GRAPHQL_URL.href.replace(/^http/, "ws"),
    connectionParams: authorization ? { authorization } : {},
    // No reconnecting here: RetryLink resubscribes each operation, with the `after` it reached.
    retryAttempts: 0,
    on: {
      closed: (event) => {
        if ((event as CloseEvent).code === 4403) onSessionEnded();
      },
    },
  });
  // A browser that knows it went offline need not wait for the socket to time out.
  const offline = () => socket.terminate();
  window.addEventListener("offline", offline);

  const client = new ApolloClient({
    cache: new InMemoryCache(),
    link: ApolloLink.split(isSubscription, ApolloLink.from([retry, resume, new GraphQLWsLink(socket)]), http),
  });
  const dispose = () => {
    window.removeEventListener("offline", offline);
    client.stop();
    void socket.dispose();
  };
  return { client, dispose };
}
