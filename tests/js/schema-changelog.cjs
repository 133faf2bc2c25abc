// The completion handler of `graphql-inspector diff` (its --onComplete) for the schema's
// breaking-change check: every breaking change the diff finds must be listed in the
// "### Breaking" part of the version's section of schema/CHANGELOG.md, by the change's
// path in backticks (`Room.messages`, `Mutation.linkIdentity.code`, a type's name) or,
// for a change without a path, by the inspector's message. An unlisted one fails the run.
//
//   SCHEMA_CHANGELOG  the changelog (default: schema/CHANGELOG.md of this checkout)
//   SCHEMA_VERSION    its section that must list them, e.g. v3 (default: the first one)
//
// Run it with `--rule verboseChanges`: without it, graphql-inspector's simplifyChanges
// drops a field's changed type when an argument was added to the same field, and v2's
// lists that became connections (a breaking change with new `first`/`after` arguments)
// would pass unseen. It prints one line, `schema-changes <JSON>`, for the caller to read.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const changelogPath =
  process.env.SCHEMA_CHANGELOG || path.join(__dirname, '..', '..', 'schema', 'CHANGELOG.md');

function sections(text) {
  const found = new Map();
  let current = null;
  for (const line of text.split('\n')) {
    const heading = /^## (v\d+)\b/.exec(line);
    if (heading) {
      current = heading[1];
      found.set(current, []);
    } else if (/^## /.test(line)) {
      current = null;
    } else if (current) {
      found.get(current).push(line);
    }
  }
  return found;
}

function breakingPart(lines) {
  const part = [];
  let inside = false;
  for (const line of lines) {
    if (/^### /.test(line)) {
      inside = /^### Breaking\b/.test(line);
    } else if (inside) {
      part.push(line);
    }
  }
  return part.join('\n');
}

module.exports = function onComplete({ breakingChanges, dangerousChanges, nonBreakingChanges }) {
  const all = sections(fs.readFileSync(changelogPath, 'utf8'));
  const version = process.env.SCHEMA_VERSION || all.keys().next().value;
  if (!all.has(version)) {
    console.error(`${changelogPath} has no "## ${version}" section`);
    process.exit(1);
  }
  const breaking = breakingPart(all.get(version));
  const named = new Set([...breaking.matchAll(/`([^`]+)`/g)].map((match) => match[1]));
  const changes = breakingChanges.map((change) => ({
    path: change.path || null,
    message: change.message,
    listed: change.path ? named.has(change.path) : breaking.includes(change.message),
  }));
  const unlisted = changes.filter((change) => !change.listed);
  const report = {
    version,
    breaking: changes,
    unlisted,
    dangerous: dangerousChanges.length,
    safe: nonBreakingChanges.length,
  };
  console.log(`schema-changes ${JSON.stringify(report)}`);
  if (unlisted.length) {
    for (const change of unlisted) {
      console.error(`breaking change not listed under ${version}'s "### Breaking" in ${changelogPath}: ` +
        `${change.path ? '`' + change.path + '`: ' : ''}${change.message}`);
    }
    process.exit(1);
  }
};
