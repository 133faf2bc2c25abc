/** Every value `extensions.code` takes on an error the gateway returns, over HTTP and over WebSocket alike. No field returns it: it is part of the schema so that code generators emit it, for clients to compare `error.extensions.code` against. An error about one argument or input field names it in `extensions.field`. Over HTTP, a request error (BAD_REQUEST, GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, PERSISTED_QUERY_NOT_FOUND, and QUERY_TOO_COMPLEX before execution) comes without `data`. */
export type ErrorCode =
  /** The request itself is malformed, before any operation runs: a body that is not a GraphQL request, an unsupported content type or encoding, multipart out of the GraphQL multipart request spec, a body over its limit, a persisted-query extension out of spec, an operation a WebSocket does not run, or a subscription sent over plain HTTP (use the WebSocket). A request refused before GraphQL sees it answers its 4xx HTTP status. Repeating it unchanged fails again. */
  | 'BAD_REQUEST'
  /** An argument or input field fails its rules (`extensions.field` names it: an input object's field by its own name), or variables do not coerce to their declared types. Fix the value; repeating it unchanged fails again. */
  | 'BAD_USER_INPUT'
  /** A uniqueness rule or a cap was lost: a login, room name, post slug or folder label taken, an identity another user holds, a full room, as many rooms as one user may be in; or a concurrent change to the same thing won (another upload of the same address book in progress), and trying again later may succeed. */
  | 'CONFLICT'
  /** Signed in but not allowed: not the room's creator (deleteRoom), not a participant (a room's messages, postRoomMessage, roomMessages). */
  | 'FORBIDDEN'
  /** The document is not GraphQL: a syntax error, at the position the error's `locations` give. Over graphql-transport-ws the socket is closed with 4400 instead, as that protocol says. */
  | 'GRAPHQL_PARSE_FAILED'
  /** The document parses but does not validate against this schema: an unknown field or argument, a missing required argument, a wrong type; or introspection while the gateway has it off. */
  | 'GRAPHQL_VALIDATION_FAILED'
  /** Anything unexpected. The message is masked; `extensions.requestId` names the server log entry that has the details, for a bug report. */
  | 'INTERNAL_SERVER_ERROR'
  /** What an argument names does not exist, or is private to someone else (which is not told apart, so existence does not leak). A query for one missing thing (`user`, `room`, `post`, `node`, `me.email`) answers null instead. */
  | 'NOT_FOUND'
  /** A persisted query's sha256Hash the gateway does not know: send the query with its hash once and it is remembered (Apollo Client's persisted-queries link does that by itself). With trusted documents, an operation outside the list. */
  | 'PERSISTED_QUERY_NOT_FOUND'
  /** The request asks for more than one request may: depth, aliases, fragments, tokens, `first`/`last` over 100, list items in total, operations in a batch, the static cost, or the size of the response; `extensions.cost` and `extensions.limit` when it is the cost, `extensions.field` when it is one argument. Ask for less. */
  | 'QUERY_TOO_COMPLEX'
  /** Too many attempts: wait `extensions.retryAfter` seconds (a whole number, at least 1) before trying again. */
  | 'RATE_LIMITED'
  /** No token, or an invalid or expired one, where one is needed: sign in again. Also a wrong login or password on signIn (one message for both). */
  | 'UNAUTHENTICATED'
  /** Cassandra, or the broker live updates travel through, cannot answer right now, or the process is at its bound of work in flight (HTTP 503 with `Retry-After`, nothing ran). `extensions.retrySafe` says whether sending the same request again is harmless: always for queries, and for mutations sent with their idempotency key. A subscription it ends can be started again later; nothing stored is lost meanwhile. */
  | 'UNAVAILABLE';
