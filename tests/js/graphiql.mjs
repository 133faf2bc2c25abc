// GraphiQL, as the gateway serves it at /graphql, in headless Chromium (Debian's
// chromium driven by playwright-core): run the example the page opens with as it
// stands (SignIn, the token into the headers, Me), type the bearer header and a
// query, run it, open the docs explorer, run a subscription and see a message
// arrive. Every request the page makes is recorded; any that does not go to the
// gateway's own origin is blocked and reported. Prints one JSON report on stdout.
//
// usage: node graphiql.mjs '{"url": "http://127.0.0.1:PORT/graphql", "chromium": "/usr/bin/chromium",
//                            "viewer": {"login", "token"}, "sender": {"login", "token"}}'
import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2] ?? "null");
if (!config) {
  console.error("usage: node graphiql.mjs '<json config>'");
  process.exit(2);
}
const { url, viewer, sender } = config;
const origin = new URL(url).origin;
const report = { requests: [], foreign: [], pageErrors: [], cspViolations: [], steps: {} };
const started = Date.now();
const step = (name, value) => {
  report.steps[name] = { ...value, atMs: Date.now() - started };
};

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  // Chromium's sandbox refuses to run as root; the page is our own.
  args: config.noSandbox ? ["--no-sandbox"] : [],
});
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  page.on("pageerror", (error) => report.pageErrors.push(String(error)));
  // The page's Content-Security-Policy must let GraphiQL do everything it does here.
  page.on("console", (message) => {
    if (message.text().includes("Content Security Policy")) report.cspViolations.push(message.text());
  });
  page.on("request", (request) => report.requests.push(request.url()));
  page.on("websocket", (socket) => report.requests.push(socket.url()));
  await page.route("**/*", (route) => {
    const target = new URL(route.request().url());
    if (target.origin === origin || target.protocol === "data:") return route.continue();
    report.foreign.push(target.href);
    return route.abort();
  });

  await page.goto(url, { waitUntil: "load" });
  await page.locator(".graphiql-query-editor .CodeMirror").waitFor();
  step("loaded", { title: await page.title() });

  const editorValue = (selector) =>
    page.evaluate((s) => document.querySelector(s).CodeMirror.getValue(), selector);
  async function typeInto(selector, text) {
    await page.locator(selector).click();
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Backspace");
    // One input event, as a paste or an input method gives: typed key by key, a slow
    // machine lets GraphiQL's debounced re-render move the cursor between two keys.
    await page.keyboard.insertText(text);
    await page.keyboard.press("Escape");
    return editorValue(selector);
  }
  // GraphiQL parses the editor's text a moment after each change (debounced), and picks
  // HTTP or the WebSocket from that parse; it writes the text into the page's URL (`q`)
  // in the same step, so once the URL has it, running sends what was typed.
  const QUERY = ".graphiql-query-editor .CodeMirror";
  async function typeQuery(text) {
    const typed = await typeInto(QUERY, text);
    await page.waitForFunction(
      (expected) => new URLSearchParams(window.location.search).get("q") === expected,
      typed,
    );
    return typed;
  }
  const RESPONSE = ".graphiql-response .CodeMirror";
  async function run(until) {
    await page.locator(".graphiql-execute-button").click();
    await page.waitForFunction(
      ([selector, text]) => document.querySelector(selector)?.CodeMirror.getValue().includes(text),
      [RESPONSE, until],
    );
    return JSON.parse(await editorValue(RESPONSE));
  }

  // The example the editor opens with, run as it stands: the cursor into an operation and
  // Ctrl-Enter runs that one, as its first lines say.
  const example = await editorValue(QUERY);
  async function runAtLine(marker, until) {
    const before = await editorValue(RESPONSE);
    await page.evaluate(
      ([selector, text]) => {
        const cm = document.querySelector(selector).CodeMirror;
        const line = cm.getValue().split("\n").findIndex((l) => l.startsWith(text));
        cm.focus();
        cm.setCursor({ line: line + 1, ch: 2 });
      },
      [QUERY, marker],
    );
    await page.keyboard.press("Control+Enter");
    await page.waitForFunction(
      ([selector, text, previous]) => {
        const value = document.querySelector(selector)?.CodeMirror.getValue() ?? "";
        return value !== previous && value.includes(text);
      },
      [RESPONSE, until, before],
    );
    return JSON.parse(await editorValue(RESPONSE));
  }
  const signedIn = await runAtLine("mutation SignIn", '"token"');
  await page.locator(".graphiql-editor-tools").getByText("Headers", { exact: true }).click();
  const HEADERS = ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror";
  const token = signedIn.data?.signIn?.token ?? "";
  await typeInto(HEADERS, `{"Authorization": "Bearer ${token}"}`);
  const me = await runAtLine("query Me", '"me"');
  step("example", {
    opensWithExample: example.includes("mutation SignIn") && example.includes("query Me"),
    signedIn: signedIn.data?.signIn?.user?.login ?? null,
    me: me.data?.me?.user?.login ?? null,
    errors: [...(signedIn.errors ?? []), ...(me.errors ?? [])],
  });

  // The bearer token, typed into the headers editor (GraphiQL also hands it to graphql-ws).
  const headers = await typeInto(HEADERS, `{"Authorization": "Bearer ${viewer.token}"}`);
  step("headers", { typed: JSON.parse(headers).Authorization === `Bearer ${viewer.token}` });

  // A query, typed and run.
  const query = await typeQuery("{ me { id user { login firstname } } }");
  const result = await run(viewer.login);
  step("query", { typed: query, login: result.data?.me?.user?.login ?? null, errors: result.errors ?? null });

  // The documentation explorer: the root types, then Query's fields.
  await page.locator('button[aria-label="Show Documentation Explorer"]').click();
  const docs = page.locator(".graphiql-doc-explorer");
  await docs.getByText("Query", { exact: true }).first().click();
  await docs.getByText("node", { exact: true }).first().waitFor();
  step("docs", { text: (await docs.innerText()).slice(0, 2000) });

  // A subscription: it runs over the WebSocket; messages are sent until one shows.
  const subscription = await typeQuery("subscription { messageReceived { content sender { login } } }");
  await page.locator(".graphiql-execute-button").click();
  const sends = [];
  const delivered = page.waitForFunction(
    (selector) => document.querySelector(selector)?.CodeMirror.getValue().includes("from the test"),
    RESPONSE,
    { timeout: 20_000 },
  );
  const sending = setInterval(() => {
    const content = `from the test ${sends.length + 1}`;
    sends.push(
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${sender.token}` },
        body: JSON.stringify({
          query: "mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }",
          variables: { to: viewer.login, c: content },
        }),
      }).then(
        async (response) => `${response.status} ${(await response.text()).slice(0, 300)}`,
        (error) => String(error),
      ),
    );
  }, 300);
  let arrived = true;
  try {
    await delivered;
  } catch {
    arrived = false;
  } finally {
    clearInterval(sending);
  }
  const shown = await editorValue(RESPONSE);
  const event = arrived ? JSON.parse(shown) : {};
  step("subscription", {
    typed: subscription,
    content: event.data?.messageReceived?.content ?? null,
    sender: event.data?.messageReceived?.sender?.login ?? null,
    sent: sends.length,
    ...(arrived ? {} : { shown, sends: (await Promise.all(sends)).slice(0, 3) }),
  });
} finally {
  await browser.close();
}
report.totalMs = Date.now() - started;
process.stdout.write(JSON.stringify(report));
