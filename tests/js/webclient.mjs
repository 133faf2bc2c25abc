// The reference web client (examples/web, built) in headless Chromium, driven as two people use
// it: one signs up, the other signs in; they chat with presence, receipts and typing; the first
// goes offline while messages arrive and comes back to exactly those messages; then rooms, the
// mailbox (an upload and a signed download) and the blog. The "far-behind" scenario: alice,
// offline, misses more than the gateway replays, and comes back to the newest page, then live.
// `app` serves the built files and forwards /graphql (HTTP and WebSocket) and /attachments to
// the gateway (`vite preview`). A screenshot of each screen goes to `artifacts`. Prints one
// JSON report on stdout.
//
// usage: node webclient.mjs '{"scenario": "tour" | "far-behind", "app": "http://127.0.0.1:PORT/",
//   "url": "<the gateway's /graphql>", "chromium": "/usr/bin/chromium", "noSandbox": false,
//   "artifacts": "<dir>", "alice": {"login", "password", "firstname", "lastname", "email"},
//   "bob": {"login", "password", "token"}, "room": "<a room bob created>",
//   "post": "<title of the newest post>", "file": {"name", "text"}, "missed": <count, far-behind>}'
// WEBCLIENT_TRACE=1 prints every WebSocket frame and console warning on stderr.
import { createHash } from "node:crypto";
import path from "node:path";

import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2] ?? "null");
if (!config) {
  console.error("usage: node webclient.mjs '<json config>'");
  process.exit(2);
}
const { alice, bob } = config;
const origin = new URL(config.app).origin;
const report = { pageErrors: [], consoleErrors: [], steps: {}, screenshots: {}, subscribes: [] };
const started = Date.now();
const trace = process.env.WEBCLIENT_TRACE ? (...parts) => console.error(...parts) : () => {};
const step = (name, value = {}) => {
  report.steps[name] = { ...value, atMs: Date.now() - started };
};

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  // Chromium's sandbox refuses to run as root; the pages are our own.
  args: config.noSandbox ? ["--no-sandbox"] : [],
});

const people = [];
async function person(name) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => report.pageErrors.push(`${name}: ${error}`));
  page.on("console", (message) => {
    if (message.type() === "warning") trace(name, "warning", message.text());
    // Failed reconnects while offline are expected; anything else is reported.
    if (message.type() === "error" && !message.text().includes("ERR_INTERNET_DISCONNECTED")) {
      report.consoleErrors.push(`${name}: ${message.text()}`);
    }
  });
  const sockets = { opened: 0, closed: 0 };
  page.on("websocket", (socket) => {
    sockets.opened += 1;
    socket.on("close", () => (sockets.closed += 1));
    socket.on("framereceived", ({ payload }) => trace(name, "<", String(payload)));
    socket.on("framesent", ({ payload }) => {
      trace(name, ">", String(payload));
      const message = JSON.parse(String(payload));
      if (message.type === "subscribe" && message.payload.operationName === "MessageReceived") {
        report.subscribes.push({ who: name, after: message.payload.variables.after ?? null, atMs: Date.now() - started });
      }
    });
  });
  const who = { name, context, page, sockets };
  people.push(who);
  return who;
}

async function shoot(who, screen) {
  const file = path.join(config.artifacts, `${screen}.png`);
  await who.page.screenshot({ path: file, fullPage: true });
  report.screenshots[screen] = file;
}

const messagesOf = (page, list = "Messages") =>
  page.getByRole("list", { name: list, exact: true }).locator("li .content").allInnerTexts();
const textbox = (page, name) => page.getByRole("textbox", { name, exact: true });
async function say(page, text) {
  await textbox(page, "Message").fill(text);
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page.getByRole("list", { name: "Messages", exact: true }).getByText(text, { exact: true }).waitFor();
}

/** Every screen, two people. */
async function tour() {
  const a = await person("alice");
  const b = await person("bob");

  // Sign up (alice) and sign in (bob).
  await a.page.goto(`${origin}/`);
  await a.page.getByRole("heading", { name: "Sign in" }).waitFor();
  await shoot(a, "sign-in");
  await a.page.getByRole("button", { name: "Create an account" }).click();
  for (const [label, value] of [
    ["Login", alice.login],
    ["Password", alice.password],
    ["First name", alice.firstname],
    ["Last name", alice.lastname],
    ["Email", alice.email],
  ]) {
    await a.page.getByLabel(label, { exact: true }).fill(value);
  }
  await a.page.getByRole("button", { name: "Sign up", exact: true }).click();
  await a.page.getByRole("heading", { name: "Chats" }).waitFor();
  step("signedUp");

  await b.page.goto(`${origin}/`);
  await b.page.getByLabel("Login", { exact: true }).fill(bob.login);
  await b.page.getByLabel("Password", { exact: true }).fill(bob.password);
  await b.page.getByRole("button", { name: "Sign in", exact: true }).click();
  await b.page.getByRole("heading", { name: "Chats" }).waitFor();
  step("signedIn");

  // Bob writes; alice's main view shows him, online, with one unread, live.
  await b.page.goto(`${origin}/#/chat/${alice.login}`);
  await say(b.page, "hello 1");
  const row = a.page.getByRole("list", { name: "Talk partners" }).getByRole("listitem").filter({ hasText: `@${bob.login}` });
  await row.getByLabel("unread").filter({ hasText: "1" }).waitFor();
  await row.getByText("online", { exact: true }).waitFor();
  step("mainView", { row: await row.innerText(), total: await a.page.locator("nav .badge").innerText() });
  await shoot(a, "chats");

  // Alice opens the conversation: it is read, and bob sees the receipt.
  await a.page.getByRole("link", { name: new RegExp(`@${bob.login}`) }).click();
  await a.page.getByRole("list", { name: "Messages", exact: true }).getByText("hello 1").waitFor();
  await b.page.locator("li", { hasText: "hello 1" }).getByText("Seen").waitFor();
  await a.page.locator("nav .badge").waitFor({ state: "detached" });
  step("receipt");

  // Alice types; bob sees it; alice answers.
  await textbox(a.page, "Message").pressSequentially("hi", { delay: 50 });
  await b.page.getByText("is typing").waitFor();
  step("typing", { shown: await b.page.locator(".typing").innerText() });
  await a.page.getByRole("button", { name: "Send", exact: true }).click();
  await a.page.getByRole("list", { name: "Messages", exact: true }).getByText("hi", { exact: true }).waitFor();
  await b.page.getByRole("list", { name: "Messages", exact: true }).getByText("hi", { exact: true }).waitFor();
  await b.page.getByText("is typing").waitFor({ state: "detached" });
  step("answered", { alice: await messagesOf(a.page), bob: await messagesOf(b.page) });
  await shoot(b, "conversation");

  // Alice goes offline: her socket is lost (bob sees her last seen), three messages arrive
  // meanwhile, and back online she resumes from the last message she had.
  const closedBefore = a.sockets.closed;
  await a.context.setOffline(true);
  await b.page.getByLabel("presence").getByText("last seen").waitFor();
  step("offline", { socketsClosed: a.sockets.closed - closedBefore, bobSees: await b.page.getByLabel("presence").innerText() });
  const missed = ["missed 1", "missed 2", "missed 3"];
  for (const text of missed) await say(b.page, text);
  const whileOffline = await messagesOf(a.page);
  const subscribesBefore = report.subscribes.length;
  await a.context.setOffline(false);
  await a.page.getByRole("list", { name: "Messages", exact: true }).getByText(missed.at(-1)).waitFor();
  await b.page.getByLabel("presence").getByText("online", { exact: true }).waitFor();
  step("back", {
    whileOffline,
    after: await messagesOf(a.page),
    resubscribed: report.subscribes.slice(subscribesBefore).filter((s) => s.who === "alice"),
  });

  // Rooms: alice joins bob's room; bob posts; alice sees it live.
  await a.page.goto(`${origin}/#/rooms/${config.room}`);
  await a.page.getByRole("button", { name: `Join #${config.room}` }).click();
  await b.page.goto(`${origin}/#/rooms/${config.room}`);
  await textbox(a.page, "Room message").waitFor();
  await textbox(b.page, "Room message").fill("welcome to the room");
  await b.page.getByRole("button", { name: "Post", exact: true }).click();
  await a.page.getByRole("list", { name: "Room messages" }).getByText("welcome to the room").waitFor();
  step("room", { alice: await messagesOf(a.page, "Room messages") });
  await shoot(a, "rooms");

  // Mail: alice sends bob an email with an attachment (a multipart upload); bob opens it and
  // downloads the file through its signed link, with no Authorization header.
  await a.page.goto(`${origin}/#/mail/new`);
  await textbox(a.page, "To").fill(bob.login);
  await textbox(a.page, "Subject").fill("The minutes");
  await textbox(a.page, "Body").fill("Attached.");
  await a.page.getByLabel("Attachments").setInputFiles({
    name: config.file.name,
    mimeType: "text/plain",
    buffer: Buffer.from(config.file.text),
  });
  await a.page.getByRole("button", { name: "Send", exact: true }).click();
  await a.page.getByRole("heading", { name: "sent" }).waitFor();
  await a.page.getByRole("list", { name: "Emails" }).getByText("The minutes").waitFor();
  await b.page.goto(`${origin}/#/mail`);
  await b.page.getByRole("list", { name: "Emails" }).getByText("The minutes").click();
  const link = b.page.getByRole("list", { name: "Attachments" }).getByRole("link", { name: config.file.name });
  const href = await link.getAttribute("href");
  const download = await b.page.evaluate(async (url) => {
    const response = await fetch(url); // no Authorization: the link is signed
    return { status: response.status, text: await response.text() };
  }, href);
  step("mail", {
    href,
    status: download.status,
    sha256: createHash("sha256").update(download.text).digest("hex"),
    expected: createHash("sha256").update(config.file.text).digest("hex"),
  });
  await shoot(b, "mail");

  // The blog's front page.
  await a.page.goto(`${origin}/#/blog`);
  await a.page.getByRole("heading", { name: config.post }).waitFor();
  step("blog", { titles: await a.page.locator("article h2").allInnerTexts() });
  await shoot(a, "blog");
}

/** More missed than the gateway replays: the subscription's `after` is refused, the screen's
 * lists are fetched again, and the subscription goes live from there. */
async function farBehind() {
  const a = await person("alice");
  await a.page.goto(`${origin}/`);
  await a.page.getByLabel("Login", { exact: true }).fill(alice.login);
  await a.page.getByLabel("Password", { exact: true }).fill(alice.password);
  await a.page.getByRole("button", { name: "Sign in", exact: true }).click();
  await a.page.goto(`${origin}/#/chat/${bob.login}`);
  await a.page.getByRole("list", { name: "Messages", exact: true }).getByText("before").waitFor();
  await a.context.setOffline(true);
  // Bob, over HTTP: as many messages as the gateway replays, and one more.
  const send = (texts) =>
    fetch(config.url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${bob.token}` },
      body: JSON.stringify({
        query: `mutation($to: String!, ${texts.map((_, n) => `$c${n}: String!`).join(", ")}) {
          ${texts.map((_, n) => `m${n}: sendMessage(to: $to, content: $c${n}) { id }`).join("\n")}
        }`,
        variables: { to: alice.login, ...Object.fromEntries(texts.map((text, n) => [`c${n}`, text])) },
      }),
    }).then(async (response) => {
      const body = await response.json();
      if (body.errors) throw new Error(JSON.stringify(body.errors));
    });
  const texts = Array.from({ length: config.missed }, (_, n) => `late ${n + 1}`);
  for (let n = 0; n < texts.length; n += 25) await send(texts.slice(n, n + 25));
  step("sent", { count: texts.length });
  const subscribesBefore = report.subscribes.length;
  await a.context.setOffline(false);
  const last = texts.at(-1);
  await a.page.getByRole("list", { name: "Messages", exact: true }).getByText(last, { exact: true }).waitFor();
  const back = await messagesOf(a.page);
  await send(["live again"]);
  await a.page.getByRole("list", { name: "Messages", exact: true }).getByText("live again").waitFor();
  step("back", {
    shown: back,
    then: (await messagesOf(a.page)).slice(-2),
    resubscribed: report.subscribes.slice(subscribesBefore),
  });
  await shoot(a, "far-behind");
}

try {
  await (config.scenario === "far-behind" ? farBehind() : tour());
} catch (error) {
  // What each page showed when it failed, beside the screenshots of the screens that passed.
  for (const who of people) {
    await who.page.screenshot({ path: path.join(config.artifacts, `failed-${who.name}.png`), fullPage: true });
  }
  console.error(JSON.stringify(report));
  throw error;
} finally {
  await browser.close();
}
report.totalMs = Date.now() - started;
process.stdout.write(JSON.stringify(report));
