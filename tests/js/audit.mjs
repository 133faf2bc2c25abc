// Runs graphql-http's GraphQL-over-HTTP audit against a gateway and prints the
// results as JSON on stdout: [{id, name, status, reason}], status ok|warn|error.
import { auditServer } from "graphql-http";

const url = process.argv[2];
if (!url) {
  console.error("usage: node audit.mjs <graphql url>");
  process.exit(2);
}

const results = await auditServer({ url });
const report = [];
for (const result of results) {
  const entry = { id: result.id, name: result.name, status: result.status };
  if (result.status !== "ok") {
    entry.reason = result.reason;
    try {
      const response = result.response;
      entry.httpStatus = response.status;
      entry.contentType = response.headers.get("content-type");
      entry.body = await response.text();
    } catch {
      // the response body may already have been read by the audit
    }
  }
  report.push(entry);
}
process.stdout.write(JSON.stringify(report));
