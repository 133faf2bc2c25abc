// Apollo Client 4 with the default InMemoryCache (no typePolicies, no update functions)
// against a running gateway: the cache-ready payloads of v3 keep every cached list that
// shows a direct message current with no refetch.
//
// - Alice's talkPartners and conversation queries (the latter both by `me.conversation(with:)`
//   and by `node(id:)`) are cached; she sends a message selecting the payload's links
//   (conversation, talkPartner); cache-only reads of the three queries then show it, with no
//   operation through the link after the mutation. Sent without the links, they stay stale.
// - Bob's queries are cached and his messageReceived subscription (graphql-ws) selects the
//   same links: Apollo writes the event into his cache, and cache-only reads show the new
//   message, last message and unread count with no operation at all. Without the links, stale.
//   The cached talkPartners list keeps the order it was fetched in (the payload updates rows,
//   not the list); the rows' lastMessageAt, which the cache holds, gives the gateway's order.
// - Rooms the same way: alice's postRoomMessage selecting `room { id messages(...) }`, and bob's
//   roomMessages event selecting the same, update both cached room queries.
// - Ids are unique across types: an EmailSummary and its Email stay two entities, even in a
//   cache keyed by id alone (Relay's store model); node(id:) of a cached message is that message.
//
// Prints one JSON report on stdout.
//
// usage: node apollo_cache.mjs '{"url": "http://127.0.0.1:PORT/graphql",
//                                "alice": {"login", "token"}, "bob": {...}, "carol": {...}}'
import { isDeepStrictEqual } from "node:util";

import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition } from "@apollo/client/utilities";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const config = JSON.parse(process.argv[2] ?? "null");
if (!config) {
  console.error("usage: node apollo_cache.mjs '<json config>'");
  process.exit(2);
}
const { url, alice, bob, carol } = config;
const wsUrl = url.replace(/^http/, "ws");
/** How long any wait for the gateway may take before the script gives up. */
const TIMEOUT_MS = 30_000;
const sockets = [];

/** fetch that records the operation name of every HTTP request a client makes. */
function recordingFetch(log) {
  return async (input, init = {}) => {
    const body = typeof init.body === "string" ? JSON.parse(init.body) : null;
    log.push(body?.operationName ?? "?");
    return fetch(input, init);
  };
}

/**
 * A signed-in app's client: HTTP for queries and mutations (every request recorded in
 * `client.requests`), graphql-ws for subscriptions, and `cache` (a plain InMemoryCache).
 * Every operation that reaches the link, either way, is recorded in `client.operations`:
 * a read the cache answers never does.
 */
function appClient(user, cache = new InMemoryCache()) {
  const authorization = `Bearer ${user.token}`;
  const requests = [];
  const operations = [];
  const ws = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { authorization } });
  sockets.push(ws);
  const counting = new ApolloLink((operation, forward) => {
    operations.push(operation.operationName ?? "?");
    return forward(operation);
  });
  const link = counting.concat(
    ApolloLink.split(
      ({ query }) => {
        const definition = getMainDefinition(query);
        return definition.kind === "OperationDefinition" && definition.operation === "subscription";
      },
      new GraphQLWsLink(ws),
      new HttpLink({ uri: url, headers: { authorization }, fetch: recordingFetch(requests) }),
    ),
  );
  const client = new ApolloClient({ link, cache });
  client.requests = requests;
  client.operations = operations;
  return client;
}

/**
 * A promise of the first value `probe` returns that is not undefined (or of the error it
 * throws), checked now and whenever `poke` is called.
 */
function waitFor(probe, what) {
  let poke;
  const promise = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), TIMEOUT_MS);
    poke = () => {
      try {
        const value = probe();
        if (value === undefined) return;
        resolve(value);
      } catch (error) {
        reject(error);
      }
      clearTimeout(timer);
    };
  });
  poke();
  return { promise, poke };
}

/**
 * A running subscription whose events (its root field `field`) are kept, so a test can wait
 * for one whatever arrives first.
 */
function listen(client, query, { field = "messageReceived", variables } = {}) {
  const events = [];
  const waiters = new Set();
  const subscription = client.subscribe({ query, variables }).subscribe({
    next: ({ data, error }) => {
      events.push(error ? { error: String(error) } : data[field]);
      for (const poke of waiters) poke();
    },
    error: (error) => {
      events.push({ error: String(error) });
      for (const poke of waiters) poke();
    },
  });
  return {
    events,
    stop: () => subscription.unsubscribe(),
    /** The first event `match` accepts (an error event fails the wait). */
    async next(match, what) {
      const { promise, poke } = waitFor(() => {
        const failed = events.find((e) => e.error);
        if (failed) throw new Error(failed.error);
        return events.find(match);
      }, what);
      waiters.add(poke);
      try {
        return await promise;
      } finally {
        waiters.delete(poke);
      }
    },
  };
}

// One conversation page's selection, the same in the query, the mutation's payload and the
// subscription's event: the cache keys the field by its arguments, so the page a payload
// carries replaces the cached page only when the arguments are the same.
const PAGE = "id unreadCount messages(first: 50) { edges { cursor node { id content } } }";
const TALK_PARTNERS = gql`
  query TalkPartners {
    me { id talkPartners(first: 10) { nodes { id lastMessage lastMessageAt unreadCount partner { id login } conversation { id } } } }
  }
`;
const CONVERSATION = gql`
  query Conversation($with: String!) { me { id conversation(with: $with) { ${PAGE} } } }
`;
// The same conversation fetched again by its global id (Relay's way; Apollo keys the root
// field by the id and links it to the same Conversation entity).
const CONVERSATION_NODE = gql`
  query ConversationNode($id: ID!) { node(id: $id) { id ... on Conversation { ${PAGE} } } }
`;
const SEND = gql`
  mutation Send($to: String!, $content: String!) {
    sendMessage(to: $to, content: $content) {
      id content sentAt
      conversation { ${PAGE} }
      talkPartner { id lastMessage lastMessageAt unreadCount }
    }
  }
`;
const SEND_WITHOUT_LINKS = gql`
  mutation SendWithoutLinks($to: String!, $content: String!) {
    sendMessage(to: $to, content: $content) { id content sentAt }
  }
`;
const RECEIVED = gql`
  subscription Received {
    messageReceived {
      id content sentAt sender { id login }
      conversation { ${PAGE} }
      talkPartner { id lastMessage lastMessageAt unreadCount }
    }
  }
`;
const RECEIVED_WITHOUT_LINKS = gql`
  subscription ReceivedWithoutLinks { messageReceived { id content sentAt sender { id login } } }
`;

/**
 * Calls `probe(n)`, a write the listeners hear, once and then again each 100 ms until every
 * wait in `waits` is over: the gateway does not acknowledge a subscription, so hearing one of
 * its own writes is how a client knows it is live.
 */
async function untilLive(waits, probe) {
  const heard = Promise.all(waits);
  let live = false;
  heard.then(
    () => (live = true),
    () => (live = true),
  );
  for (let n = 1; !live; n += 1) {
    await probe(n);
    await Promise.race([heard.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 100))]);
  }
  await heard;
}

/** The id of the viewer's conversation with `partner`, as the cached talk partners list says. */
function conversationId(client, partner) {
  const partners = client.readQuery({ query: TALK_PARTNERS });
  return partners.me.talkPartners.nodes.find((p) => p.partner.login === partner).conversation.id;
}

/** The three cached queries fetched from the network (the baseline the screens show). */
async function loadScreens(client, partner) {
  await client.query({ query: TALK_PARTNERS, fetchPolicy: "network-only" });
  await client.query({ query: CONVERSATION, variables: { with: partner }, fetchPolicy: "network-only" });
  const id = conversationId(client, partner);
  await client.query({ query: CONVERSATION_NODE, variables: { id }, fetchPolicy: "network-only" });
}

/** What a page of the cache says: its length, newest message and whether its cursors are unique. */
function page(connection) {
  const edges = connection?.edges ?? [];
  return {
    messages: edges.length,
    first: edges[0] ? { id: edges[0].node.id, content: edges[0].node.content } : null,
    cursorsUnique: new Set(edges.map((e) => e.cursor)).size === edges.length,
  };
}

/**
 * What the cache alone says of the conversation with `partner`, read both ways a screen
 * does: `readQuery` and a `cache-only` query (which never touches the network).
 */
async function fromCache(client, partner) {
  const requestsBefore = client.requests.length;
  const operationsBefore = client.operations.length;
  const id = conversationId(client, partner);
  const partners = client.readQuery({ query: TALK_PARTNERS });
  const conversation = client.readQuery({ query: CONVERSATION, variables: { with: partner } });
  const byNode = client.readQuery({ query: CONVERSATION_NODE, variables: { id } });
  const viaQuery = [
    (await client.query({ query: TALK_PARTNERS, fetchPolicy: "cache-only" })).data,
    (await client.query({ query: CONVERSATION, variables: { with: partner }, fetchPolicy: "cache-only" })).data,
    (await client.query({ query: CONVERSATION_NODE, variables: { id }, fetchPolicy: "cache-only" })).data,
  ];
  const rows = partners?.me.talkPartners.nodes ?? [];
  const row = rows.find((p) => p.partner.login === partner) ?? null;
  const newestFirst = [...rows].sort((a, b) => Date.parse(b.lastMessageAt) - Date.parse(a.lastMessageAt));
  return {
    // readQuery and the cache-only queries agree...
    cacheOnlyQueriesAgree: isDeepStrictEqual(viaQuery, [partners, conversation, byNode]),
    // ...and none of them reached the link (so nothing went over HTTP or the socket).
    requestsWhileReading: client.requests.length - requestsBefore,
    operationsWhileReading: client.operations.length - operationsBefore,
    talkPartner: row && {
      lastMessage: row.lastMessage,
      lastMessageAt: row.lastMessageAt,
      unreadCount: row.unreadCount,
    },
    // The cached list's rows in the order it was fetched, and sorted by their lastMessageAt.
    order: rows.map((p) => p.partner.login),
    orderByLastMessageAt: newestFirst.map((p) => p.partner.login),
    conversation: conversation && {
      unreadCount: conversation.me.conversation.unreadCount,
      ...page(conversation.me.conversation.messages),
    },
    // The node(id:) query reads the very same entity.
    conversationByNode: byNode?.node ? isDeepStrictEqual(byNode.node, conversation.me.conversation) : null,
  };
}

const suffix = Date.now().toString(36);

// The conversation exists before any screen loads: bob wrote first, so alice has one unread
// and bob none.
const bobSetup = appClient(bob);
await bobSetup.mutate({ mutation: SEND_WITHOUT_LINKS, variables: { to: alice.login, content: `hello ${suffix}` } });

// Bob's two devices, each with its own cache: one subscribes with the links, one without.
// Both must be live before alice sends: carol writes to bob until each has heard her (the
// gateway does not acknowledge a subscription), which touches nothing of bob's with alice.
const bobLinked = appClient(bob);
const bobBare = appClient(bob);
const linkedEvents = listen(bobLinked, RECEIVED);
const bareEvents = listen(bobBare, RECEIVED_WITHOUT_LINKS);
{
  const carolClient = appClient(carol);
  const fromCarol = (e) => e.sender?.login === carol.login;
  await untilLive(
    [
      linkedEvents.next(fromCarol, "bob's linked subscription to go live"),
      bareEvents.next(fromCarol, "bob's bare subscription to go live"),
    ],
    (n) => carolClient.mutate({ mutation: SEND_WITHOUT_LINKS, variables: { to: bob.login, content: `probe ${n}` } }),
  );
}
// Each of bob's devices shows its screens, fetched from the network; from now on bob's
// clients must not send a single request, nor start any operation.
await loadScreens(bobLinked, alice.login);
await loadScreens(bobBare, alice.login);
const bobLinkedBefore = await fromCache(bobLinked, alice.login);
const bobBareBefore = await fromCache(bobBare, alice.login);
const bobRequestsAtBaseline = [bobLinked.requests.length, bobBare.requests.length];
const bobOperationsAtBaseline = [bobLinked.operations.length, bobBare.operations.length];

// Alice's screens, then her message with the links selected.
const aliceClient = appClient(alice);
await loadScreens(aliceClient, bob.login);
const aliceBefore = await fromCache(aliceClient, bob.login);
const sentContent = `cache-ready ${suffix}`;
const requestsBeforeSend = aliceClient.requests.length;
const operationsBeforeSend = aliceClient.operations.length;
const { data: sentData } = await aliceClient.mutate({
  mutation: SEND,
  variables: { to: bob.login, content: sentContent },
});
const sent = sentData.sendMessage;
const aliceAfter = await fromCache(aliceClient, bob.login);

// Bob's devices hear it; Apollo has written each event into that device's cache.
const isSent = (e) => e.id === sent.id;
await linkedEvents.next(isSent, "the message on bob's linked subscription");
await bareEvents.next(isSent, "the message on bob's bare subscription");
const bobLinkedAfter = await fromCache(bobLinked, alice.login);
const bobBareAfter = await fromCache(bobBare, alice.login);

// The negative for alice: the same flow on a fresh cache, the message sent without the links.
const aliceBare = appClient(alice);
await loadScreens(aliceBare, bob.login);
const aliceBareBefore = await fromCache(aliceBare, bob.login);
const bareRequestsBeforeSend = aliceBare.requests.length;
const bareOperationsBeforeSend = aliceBare.operations.length;
const { data: bareData } = await aliceBare.mutate({
  mutation: SEND_WITHOUT_LINKS,
  variables: { to: bob.login, content: `no links ${suffix}` },
});
const aliceBareAfter = await fromCache(aliceBare, bob.login);

const report = {
  sent: { id: sent.id, content: sent.content, sentAt: sent.sentAt },
  alice: {
    before: aliceBefore,
    after: aliceAfter,
    // Every request alice's client made, and those from the mutation on.
    requests: aliceClient.requests,
    requestsFromSend: aliceClient.requests.slice(requestsBeforeSend),
    operationsFromSend: aliceClient.operations.slice(operationsBeforeSend),
  },
  aliceWithoutLinks: {
    sent: bareData.sendMessage.id,
    before: aliceBareBefore,
    after: aliceBareAfter,
    requestsFromSend: aliceBare.requests.slice(bareRequestsBeforeSend),
    operationsFromSend: aliceBare.operations.slice(bareOperationsBeforeSend),
  },
  bob: {
    before: bobLinkedBefore,
    after: bobLinkedAfter,
    heard: linkedEvents.events.some(isSent),
    requestsAfterBaseline: bobLinked.requests.slice(bobRequestsAtBaseline[0]),
    operationsAfterBaseline: bobLinked.operations.slice(bobOperationsAtBaseline[0]),
  },
  bobWithoutLinks: {
    before: bobBareBefore,
    after: bobBareAfter,
    heard: bareEvents.events.some(isSent),
    requestsAfterBaseline: bobBare.requests.slice(bobRequestsAtBaseline[1]),
    operationsAfterBaseline: bobBare.operations.slice(bobOperationsAtBaseline[1]),
  },
};
linkedEvents.stop();
bareEvents.stop();

// Ids unique across types: carol mails alice; the inbox's EmailSummary and the Email it links
// are two entities with two ids...
await appClient(carol).mutate({
  mutation: gql`
    mutation Mail($to: String!, $subject: String!) {
      sendEmail(input: { to: [$to], subject: $subject, body: "Two entities." }) { id }
    }
  `,
  variables: { to: alice.login, subject: `keys ${suffix}` },
});
const INBOX = gql`
  query Inbox {
    me {
      id
      folder(label: "inbox") {
        id label unreadCount
        emails(first: 10) { nodes { id subject read from { id login } email { id subject body read from { id login } } } }
      }
    }
  }
`;
const inboxClient = appClient(alice);
const { data: inbox } = await inboxClient.query({ query: INBOX, fetchPolicy: "network-only" });
const summary = inbox.me.folder.emails.nodes.find((n) => n.subject === `keys ${suffix}`);
// ...every cached object of either cache has its own key, no raw id is used by two
// types (which Relay's store, keyed by id alone, would merge), and the inbox reads back as
// it came. A cache keyed by id alone (dataIdFromObject, what Relay does) reads it back too.
function cacheKeys(client, everything) {
  const byId = new Map();
  for (const [key, entity] of Object.entries(everything)) {
    if (!entity || entity.id === undefined) continue; // ROOT_QUERY and friends
    const types = byId.get(entity.id) ?? new Set();
    types.add(entity.__typename);
    byId.set(entity.id, types);
    if (key !== client.cache.identify(entity)) return { mismatch: key };
  }
  return {
    entities: byId.size,
    idsUsedByTwoTypes: [...byId].filter(([, types]) => types.size > 1).map(([id, types]) => [id, [...types]]),
  };
}
// Everything each of alice's caches now holds, the message screens and the inbox.
const idOnly = appClient(alice, new InMemoryCache({ dataIdFromObject: (object) => object.id ?? false }));
const { data: idOnlyInbox } = await idOnly.query({ query: INBOX, fetchPolicy: "network-only" });
report.keys = {
  summary: summary && { id: summary.id, typename: summary.__typename },
  email: summary && { id: summary.email.id, typename: summary.email.__typename },
  inCache: summary
    ? [inboxClient.cache.identify(summary), inboxClient.cache.identify(summary.email)].map(
        (key) => key !== undefined && key in inboxClient.cache.extract(),
      )
    : null,
  readBack: isDeepStrictEqual(inboxClient.readQuery({ query: INBOX }), inbox),
  idOnlyReadBack: isDeepStrictEqual(idOnly.readQuery({ query: INBOX }), idOnlyInbox),
  inbox: cacheKeys(inboxClient, inboxClient.cache.extract()),
  messages: cacheKeys(aliceClient, aliceClient.cache.extract()),
  bob: cacheKeys(bobLinked, bobLinked.cache.extract()),
};

// node(id:) of the cached message: the same entity (same cache key, same fields), not a new one.
const cachedKey = aliceClient.cache.identify({ __typename: "DirectMessage", id: sent.id });
const cachedMessage = aliceClient.cache.extract()[cachedKey];
const keysBefore = Object.keys(aliceClient.cache.extract()).length;
const { data: nodeData } = await aliceClient.query({
  query: gql`
    query Node($id: ID!) { node(id: $id) { id ... on DirectMessage { content sentAt } } }
  `,
  variables: { id: sent.id },
  fetchPolicy: "network-only",
});
const cachedAfter = aliceClient.cache.extract()[cachedKey];
report.node = {
  typename: nodeData.node?.__typename ?? null,
  sameKey: nodeData.node ? aliceClient.cache.identify(nodeData.node) === cachedKey : false,
  // The node query added its root field only: no new entity.
  newEntities: Object.keys(aliceClient.cache.extract()).length - keysBefore,
  // The fields it answered are those the cache held: the entity is unchanged.
  unchanged: cachedMessage !== undefined && isDeepStrictEqual(cachedAfter, cachedMessage),
};

// Rooms: alice creates one and bob joins it. Each shows the room's page; bob's roomMessages
// subscription and alice's postRoomMessage select the room with the same page.
const ROOM_PAGE =
  "id name participantCount messages(first: 50) { edges { cursor node { id content systemMessage author { id login } } } }";
const ROOM = gql`
  query Room($name: String!) { room(name: $name) { ${ROOM_PAGE} } }
`;
const POST = gql`
  mutation Post($room: String!, $content: String!) {
    postRoomMessage(room: $room, content: $content) { id content postedAt room { ${ROOM_PAGE} } }
  }
`;
const POST_WITHOUT_LINKS = gql`
  mutation PostWithoutLinks($room: String!, $content: String!) {
    postRoomMessage(room: $room, content: $content) { id content postedAt }
  }
`;
const ROOM_EVENTS = gql`
  subscription RoomEvents($room: String!) {
    roomMessages(room: $room) { id content postedAt author { id login } room { ${ROOM_PAGE} } }
  }
`;

/** What the cache alone says of the room (as `fromCache` does for a conversation). */
async function roomFromCache(client, name) {
  const requestsBefore = client.requests.length;
  const operationsBefore = client.operations.length;
  const cached = client.readQuery({ query: ROOM, variables: { name } });
  const viaQuery = (await client.query({ query: ROOM, variables: { name }, fetchPolicy: "cache-only" })).data;
  return {
    cacheOnlyQueriesAgree: isDeepStrictEqual(viaQuery, cached),
    requestsWhileReading: client.requests.length - requestsBefore,
    operationsWhileReading: client.operations.length - operationsBefore,
    participantCount: cached?.room.participantCount ?? null,
    ...page(cached?.room.messages),
  };
}

const roomName = `cache-${suffix}`;
const aliceRooms = appClient(alice);
const bobRooms = appClient(bob);
await aliceRooms.mutate({
  mutation: gql`
    mutation Create($name: String!) { createRoom(name: $name) { id } }
  `,
  variables: { name: roomName },
});
await bobRooms.mutate({
  mutation: gql`
    mutation Join($name: String!) { joinRoom(name: $name) { id } }
  `,
  variables: { name: roomName },
});
const roomEvents = listen(bobRooms, ROOM_EVENTS, { field: "roomMessages", variables: { room: roomName } });
{
  const prober = appClient(alice);
  await untilLive([roomEvents.next((e) => e.content?.startsWith("probe "), "bob's room subscription to go live")], (n) =>
    prober.mutate({ mutation: POST_WITHOUT_LINKS, variables: { room: roomName, content: `probe ${n}` } }),
  );
}
for (const client of [aliceRooms, bobRooms]) {
  await client.query({ query: ROOM, variables: { name: roomName }, fetchPolicy: "network-only" });
}
const aliceRoomBefore = await roomFromCache(aliceRooms, roomName);
const bobRoomBefore = await roomFromCache(bobRooms, roomName);
const roomMarks = [aliceRooms, bobRooms].map((c) => [c.requests.length, c.operations.length]);
const { data: postData } = await aliceRooms.mutate({
  mutation: POST,
  variables: { room: roomName, content: `room cache-ready ${suffix}` },
});
const posted = postData.postRoomMessage;
const aliceRoomAfter = await roomFromCache(aliceRooms, roomName);
await roomEvents.next((e) => e.id === posted.id, "the room message on bob's subscription");
const bobRoomAfter = await roomFromCache(bobRooms, roomName);
roomEvents.stop();
report.room = {
  posted: { id: posted.id, content: posted.content },
  alice: {
    before: aliceRoomBefore,
    after: aliceRoomAfter,
    requestsFromPost: aliceRooms.requests.slice(roomMarks[0][0]),
    operationsFromPost: aliceRooms.operations.slice(roomMarks[0][1]),
  },
  bob: {
    before: bobRoomBefore,
    after: bobRoomAfter,
    requestsAfterBaseline: bobRooms.requests.slice(roomMarks[1][0]),
    operationsAfterBaseline: bobRooms.operations.slice(roomMarks[1][1]),
  },
};

for (const ws of sockets) await ws.dispose();
process.stdout.write(JSON.stringify(report));
