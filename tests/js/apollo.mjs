// Apollo Client 4 against a running gateway, the way a frontend uses it: sign-in,
// the main view, a live subscription over graphql-ws, an upload and its ranged and signed downloads,
// automatic persisted queries, batching, cache normalisation with the default
// InMemoryCache (no typePolicies), and a query with a deferred fragment. Prints one JSON report on stdout.
//
// usage: node apollo.mjs '{"url": "http://127.0.0.1:PORT/graphql",
//                          "alice": {"login", "password"}, "bob": {"login", "password"},
//                          "file": {"path": "<file to upload>", "range": [first, last]}}'
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";

import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { Defer20220824Handler } from "@apollo/client/incremental";
import { BatchHttpLink } from "@apollo/client/link/batch-http";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition } from "@apollo/client/utilities";
import UploadHttpLink from "apollo-upload-client/UploadHttpLink.mjs";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const config = JSON.parse(process.argv[2] ?? "null");
if (!config) {
  console.error("usage: node apollo.mjs '<json config>'");
  process.exit(2);
}
const { url } = config;
const wsUrl = url.replace(/^http/, "ws");
const report = {};
const sockets = [];

/** fetch that records what each request sent. */
function recordingFetch(log) {
  return async (input, init = {}) => {
    const target = new URL(typeof input === "string" ? input : input.url);
    const body = typeof init.body === "string" ? JSON.parse(init.body) : null;
    const extensions = target.searchParams.get("extensions");
    log.push({
      method: init.method ?? "GET",
      batch: Array.isArray(body) ? body.length : null,
      hasQuery: Array.isArray(body)
        ? body.every((operation) => Boolean(operation.query))
        : Boolean(body?.query ?? target.searchParams.get("query")),
      hash: (body?.extensions ?? (extensions && JSON.parse(extensions)))?.persistedQuery?.sha256Hash ?? null,
    });
    return fetch(input, init);
  };
}

/** A client as a signed-in app builds it: uploads over HTTP, subscriptions over graphql-ws. */
function appClient(token, cache = new InMemoryCache()) {
  const authorization = `Bearer ${token}`;
  const ws = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: { authorization },
    lazy: true,
  });
  sockets.push(ws);
  const link = ApolloLink.split(
    ({ query }) => {
      const definition = getMainDefinition(query);
      return definition.kind === "OperationDefinition" && definition.operation === "subscription";
    },
    new GraphQLWsLink(ws),
    // apollo-upload-client's documented header for servers that prevent CSRF (Apollo Server's).
    new UploadHttpLink({ uri: url, headers: { authorization, "Apollo-Require-Preflight": "true" } }),
  );
  return new ApolloClient({ link, cache });
}

const anonymous = new ApolloClient({ link: new HttpLink({ uri: url }), cache: new InMemoryCache() });

// Sign-in.
const SIGN_IN = gql`
  mutation SignIn($login: String!, $password: String!) {
    signIn(login: $login, password: $password) { token expiresAt user { id login } }
  }
`;
async function signIn(user) {
  const { data } = await anonymous.mutate({ mutation: SIGN_IN, variables: user });
  return data.signIn;
}
const aliceAuth = await signIn(config.alice);
const bobAuth = await signIn(config.bob);
report.signIn = { login: aliceAuth.user.login, userId: aliceAuth.user.id, token: Boolean(aliceAuth.token) };
const alice = appClient(aliceAuth.token);
const bob = appClient(bobAuth.token);
const [aliceLogin, bobLogin] = [aliceAuth.user.login, bobAuth.user.login];

// Something to look at: a room, a post with a comment, messages from bob.
const suffix = Date.now().toString(36);
const roomName = `apollo-${suffix}`;
const slug = `apollo-${suffix}`;
await alice.mutate({
  mutation: gql`
    mutation Setup($room: String!, $slug: String!) {
      createRoom(name: $room) { id name }
      postRoomMessage(room: $room, content: "hello room") { id }
      publishPost(input: { slug: $slug, title: "Apollo", body: "Cached.", tags: ["cache"] }) { id slug }
      addComment(slug: $slug, input: { name: "Al", email: "al@example.com", text: "Nice" }) { id }
    }
  `,
  variables: { room: roomName, slug },
});
const SEND = gql`
  mutation Send($to: String!, $content: String!) { sendMessage(to: $to, content: $content) { id content } }
`;
for (const content of ["one", "two"]) {
  await bob.mutate({ mutation: SEND, variables: { to: aliceLogin, content } });
}

// Upload (multipart, apollo-upload-client) of the file the test wrote, then two downloads as a
// page makes them: one byte range with the bearer token, and the whole file through the signed
// Attachment.url with no Authorization header at all (what an <img> or a download manager does).
const bytes = await readFile(config.file.path);
const sent = await bob.mutate({
  mutation: gql`
    mutation SendEmail($input: EmailInput!) {
      sendEmail(input: $input) { id attachments { id filename size } }
    }
  `,
  variables: {
    input: {
      to: [aliceLogin],
      subject: "With a file",
      body: "See the attachment.",
      attachments: [new File([bytes], "clip.bin", { type: "application/octet-stream" })],
    },
  },
});
const emailId = sent.data.sendEmail.id;
const { data: emailData } = await alice.query({
  query: gql`
    query Email($id: ID!) { me { id email(id: $id) { id attachments { id filename size url urlExpiresAt } } } }
  `,
  variables: { id: emailId },
});
const [attachment] = emailData.me.email.attachments;
const sha = (b) => createHash("sha256").update(b).digest("hex");
// Without GATEWAY_PUBLIC_URL the link is a path on the API's origin: resolved as a page does.
const signedUrl = new URL(attachment.url, url);
const bareUrl = new URL(signedUrl);
bareUrl.search = "";
const [rangeFirst, rangeLast] = config.file.range;
const ranged = await fetch(bareUrl, {
  headers: { authorization: `Bearer ${aliceAuth.token}`, range: `bytes=${rangeFirst}-${rangeLast}` },
});
const rangedBytes = Buffer.from(await ranged.arrayBuffer());
const signed = await fetch(signedUrl);
const signedBytes = Buffer.from(await signed.arrayBuffer());
const unsigned = await fetch(bareUrl);
await unsigned.arrayBuffer();
report.upload = {
  size: attachment.size,
  urlExpiresInFuture: Date.parse(attachment.urlExpiresAt) > Date.now(),
  ranged: {
    status: ranged.status,
    contentRange: ranged.headers.get("content-range"),
    bytes: rangedBytes.toString("base64"),
  },
  signed: { status: signed.status, length: signedBytes.length, sha256: sha(signedBytes) },
  withoutSignatureOrToken: unsigned.status,
};

// The nine queries of a typical app; afterwards each must read back from the cache as it came.
const TALK_PARTNERS = gql`
  query TalkPartners {
    me { id talkPartners(first: 20) { nodes { id unreadCount lastMessage partner { id login } conversation { id unreadCount } } } }
  }
`;
const CONVERSATION = gql`
  query Conversation($with: String!) {
    me { id conversation(with: $with) { id unreadCount messages(first: 20) { nodes { id content sender { id login } } } } }
  }
`;
const NINE = [
  ["MainView", gql`query MainView { me { id user { id login firstname lastname } folders { id label unreadCount } } }`],
  ["TalkPartners", TALK_PARTNERS],
  ["Conversation", CONVERSATION, { with: bobLogin }],
  ["Profile", gql`query Profile($login: String!) { user(login: $login) { id login firstname bio postCount } }`,
    { login: aliceLogin }],
  ["Rooms", gql`query Rooms { rooms(first: 100) { nodes { id name participantCount creator { id login } } } }`],
  ["Room", gql`query Room($name: String!) {
      room(name: $name) { id name banner messages(first: 10) { nodes { id content author { id login } } } }
    }`, { name: roomName }],
  ["Posts", gql`query Posts { posts(first: 5) { nodes { id slug title author { id login firstname } commentCount } } }`],
  ["Post", gql`query Post($slug: String!) {
      post(slug: $slug) { id slug title body tags comments(first: 10) { nodes { id commenterName text } } }
    }`, { slug }],
  ["Inbox", gql`query Inbox {
      me { id folder(label: "inbox") { id label unreadCount emails(first: 10) { nodes { id subject read from { id login } } } } }
    }`],
];

async function readBack(client) {
  const fetched = [];
  for (const [name, query, variables] of NINE) {
    const { data } = await client.query({ query, variables, fetchPolicy: "network-only" });
    fetched.push([name, query, variables, data]);
  }
  const result = { readBack: 0, missing: [], changed: [] };
  for (const [name, query, variables, data] of fetched) {
    const cached = client.cache.readQuery({ query, variables });
    if (cached === null) result.missing.push(name);
    else if (!isDeepStrictEqual(cached, data)) result.changed.push(name);
    else result.readBack += 1;
  }
  return result;
}

report.mainView = (await alice.query({ query: NINE[0][1] })).data.me.user.login === aliceLogin;
report.cache = await readBack(alice);
// The same queries in a cache that cannot tell entities apart: what clients had before every object had an id.
report.cacheWithoutIds = await readBack(
  appClient(aliceAuth.token, new InMemoryCache({ dataIdFromObject: () => false })),
);

// markConversationRead: the talk partner and the conversation agree in the cache afterwards.
const before = alice.cache.readQuery({ query: TALK_PARTNERS });
const partnerBefore = before.me.talkPartners.nodes.find((p) => p.partner.login === bobLogin);
await alice.mutate({
  mutation: gql`
    mutation MarkRead($with: String!) {
      markConversationRead(with: $with) { id unreadCount conversation { id unreadCount } }
    }
  `,
  variables: { with: bobLogin },
});
const after = alice.cache.readQuery({ query: TALK_PARTNERS });
const partnerAfter = after.me.talkPartners.nodes.find((p) => p.partner.login === bobLogin);
const conversationAfter = alice.cache.readQuery({ query: CONVERSATION, variables: { with: bobLogin } });
report.markRead = {
  before: [partnerBefore.unreadCount, partnerBefore.conversation.unreadCount],
  talkPartner: partnerAfter.unreadCount,
  talkPartnerConversation: partnerAfter.conversation.unreadCount,
  conversation: conversationAfter.me.conversation.unreadCount,
};

// A subscription receiving a sent message (GraphQLWsLink). The server registers the
// subscription a moment after the client sends it, so bob sends until one arrives.
report.subscription = await new Promise((resolve, reject) => {
  const received = [];
  let timer;
  const subscription = alice
    .subscribe({ query: gql`subscription Live { messageReceived { id content sender { id login } } }` })
    .subscribe({
      next: ({ data, error }) => {
        if (error) return reject(error);
        received.push(data.messageReceived);
        clearInterval(timer);
        subscription.unsubscribe();
        resolve({ content: data.messageReceived.content, sender: data.messageReceived.sender.login });
      },
      error: reject,
    });
  let attempt = 0;
  timer = setInterval(() => {
    attempt += 1;
    if (attempt > 20) {
      clearInterval(timer);
      subscription.unsubscribe();
      resolve(null);
      return;
    }
    bob.mutate({ mutation: SEND, variables: { to: aliceLogin, content: `live ${attempt}` } }).catch(reject);
  }, 250);
});

// Automatic persisted queries: the first use registers, later ones send only the hash (GET).
const apqLog = [];
const apq = new ApolloClient({
  link: ApolloLink.from([
    new PersistedQueryLink({
      sha256: (text) => createHash("sha256").update(text).digest("hex"),
      useGETForHashedQueries: true,
    }),
    new HttpLink({ uri: url, fetch: recordingFetch(apqLog) }),
  ]),
  cache: new InMemoryCache(),
});
const POST = NINE[7][1];
const first = await apq.query({ query: POST, variables: { slug }, fetchPolicy: "network-only" });
const registration = apqLog.splice(0);
const second = await apq.query({ query: POST, variables: { slug }, fetchPolicy: "network-only" });
report.apq = {
  registration,
  hashOnly: apqLog,
  sameData: isDeepStrictEqual(first.data, second.data) && second.data.post.slug === slug,
};

// BatchHttpLink: three queries issued together travel in one HTTP request.
const batchLog = [];
const batched = new ApolloClient({
  link: new BatchHttpLink({ uri: url, batchMax: 10, batchInterval: 20, fetch: recordingFetch(batchLog) }),
  cache: new InMemoryCache(),
});
const three = await Promise.all([
  batched.query({ query: gql`query A($login: String!) { user(login: $login) { id login } }`, variables: { login: aliceLogin } }),
  batched.query({ query: gql`query B($slug: String!) { post(slug: $slug) { id title } }`, variables: { slug } }),
  batched.query({ query: gql`query C($name: String!) { room(name: $name) { id name } }`, variables: { name: roomName } }),
]);
report.batch = {
  requests: batchLog,
  answers: [three[0].data.user.login === aliceLogin, three[1].data.post.title === "Apollo", three[2].data.room.name === roomName],
};

// @defer: the conversation's header first, its messages in a later part (multipart/mixed,
// Defer20220824Handler: Accept multipart/mixed;deferSpec=20220824). Each emission is recorded.
const deferred = new ApolloClient({
  link: new HttpLink({ uri: url, headers: { authorization: `Bearer ${aliceAuth.token}` } }),
  cache: new InMemoryCache(),
  incrementalHandler: new Defer20220824Handler(),
});
report.defer = await new Promise((resolve, reject) => {
  const emissions = [];
  const subscription = deferred
    .watchQuery({
      query: gql`
        query DeferredConversation($with: String!) {
          me { id conversation(with: $with) { id unreadCount
            ... @defer { messages(first: 20) { nodes { id content sender { id login } } } } } }
        }
      `,
      variables: { with: bobLogin },
      fetchPolicy: "network-only",
    })
    .subscribe({
      next: ({ data, dataState, error }) => {
        if (error) return reject(error);
        if (!data?.me) return;
        const { conversation } = data.me;
        emissions.push({
          dataState,
          unreadCount: conversation.unreadCount,
          messages: conversation.messages ? conversation.messages.nodes.map((node) => node.content) : null,
        });
        if (dataState === "complete") {
          subscription.unsubscribe();
          resolve(emissions);
        }
      },
      error: reject,
    });
});

for (const ws of sockets) await ws.dispose();
process.stdout.write(JSON.stringify(report));
