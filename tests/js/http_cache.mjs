// A page of the gateway's origin, in headless Chromium (Debian's chromium driven by
// playwright-core), loads the same GraphQL GET twice with fetch() as an app would: a
// query's text, then a persisted query's hash alone. The browser keeps the first answer
// (Cache-Control: public, max-age=0) and revalidates it with If-None-Match. What went over
// the wire (200, then 304) is read from Chromium's own network log (the DevTools protocol's
// raw response headers: playwright reports the answer the cache then hands the page), and
// what fetch() handed the page (the same JSON both times). Prints one JSON report on stdout.
//
// usage: node http_cache.mjs '{"base": "http://127.0.0.1:PORT", "chromium": "/usr/bin/chromium",
//                              "noSandbox": true, "loads": ["/graphql?query=...", ...]}'
import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2] ?? "null");
if (!config) {
  console.error("usage: node http_cache.mjs '<json config>'");
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  args: config.noSandbox ? ["--no-sandbox"] : [],
});
const report = { network: [], loads: [] };
const lower = (headers) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  // What went over the wire for each GraphQL GET: the request's headers as sent, the
  // response's status and headers as received.
  const cdp = await page.context().newCDPSession(page);
  const wire = new Map();
  const entry = (id) => wire.get(id) ?? wire.set(id, {}).get(id);
  cdp.on("Network.requestWillBeSent", (event) => {
    entry(event.requestId).url = event.request.url;
  });
  cdp.on("Network.requestWillBeSentExtraInfo", (event) => {
    entry(event.requestId).sent = lower(event.headers);
  });
  cdp.on("Network.responseReceivedExtraInfo", (event) => {
    Object.assign(entry(event.requestId), { status: event.statusCode, received: lower(event.headers) });
  });
  await cdp.send("Network.enable");
  await page.goto(`${config.base}/healthz`);
  for (const path of config.loads) {
    for (const attempt of [1, 2]) {
      const answer = await page.evaluate(async (url) => {
        const response = await fetch(url);
        return {
          status: response.status,
          contentType: response.headers.get("content-type"),
          body: await response.text(),
        };
      }, path);
      report.loads.push({ path, attempt, ...answer });
    }
  }
  for (const { url, sent, status, received } of wire.values()) {
    if (!url || new URL(url).pathname !== "/graphql") continue;
    const target = new URL(url);
    report.network.push({
      path: target.pathname + target.search,
      status: status ?? null,
      ifNoneMatch: sent?.["if-none-match"] ?? null,
      accept: sent?.["accept"] ?? null,
      etag: received?.["etag"] ?? null,
      cacheControl: received?.["cache-control"] ?? null,
      requestId: received?.["x-request-id"] ?? null,
    });
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));
