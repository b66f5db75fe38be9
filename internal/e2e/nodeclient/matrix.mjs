// The official MCP TypeScript SDK in the client matrix of durawait's
// end-to-end tests (protocol 2025-11-25, sessions): list tools; a wait that
// matches; a call cut off by the client's own timeout, then tools/list and
// the identical call again on the same client; two concurrent calls, each
// with its own progress. It prints what it saw as one JSON line; the Go
// test (clients_test.go) judges it.
//
// usage: node matrix.mjs http URL DIR
//        node matrix.mjs stdio DURAWAIT CONFIG DIR
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const [mode, ...rest] = process.argv.slice(2);
let transport, dir;
if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
  dir = rest[1];
} else if (mode === "stdio") {
  transport = new StdioClientTransport({
    command: rest[0],
    args: ["serve", "--stdio", "--config", rest[1], "--engine-port", "0", "--ui-port", "0"],
    stderr: "ignore",
  });
  dir = rest[2];
} else {
  console.error("usage: matrix.mjs http URL DIR | stdio DURAWAIT CONFIG DIR");
  process.exit(2);
}

// Record the protocol version the SDK negotiates (it tells HTTP transports).
const report = { progress: {} };
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  report.protocolVersion = v;
  setProtocolVersion?.(v);
};
const client = new Client({ name: "durawait-e2e-node-matrix", version: "1.0.0" });
await client.connect(transport);

const file = (name) => join(dir, name);
const waitArgs = (name) => ({
  probe: { tool: "read_file", args: { path: file(name) } },
  until: { matches: "READY" },
  poll_sec: 1,
  max_wait_sec: 60,
});

// wait calls wait_for on name's file; once its first progress notification
// arrives, onFirstProgress runs. Progress messages are kept under key.
function wait(name, key, { timeout = 120000, onFirstProgress } = {}) {
  report.progress[key] = [];
  return client.callTool({ name: "wait_for", arguments: waitArgs(name) }, undefined, {
    timeout,
    onprogress: (p) => {
      report.progress[key].push(p.message ?? "");
      if (report.progress[key].length === 1 && onFirstProgress) onFirstProgress();
    },
  });
}

report.tools = (await client.listTools()).tools.map((t) => t.name).sort();

writeFileSync(file("build"), "building");
report.match = (await wait("build", "build", { onFirstProgress: () => writeFileSync(file("build"), "READY") })).structuredContent;

writeFileSync(file("deploy"), "deploying");
const first = Date.now();
try {
  await wait("deploy", "deploy-1", { timeout: 2000 });
  report.cutOffError = "";
} catch (err) {
  report.cutOffError = String(err?.message ?? err);
}
report.toolsAfterCut = (await client.listTools()).tools.map((t) => t.name).sort();
const reattached = wait("deploy", "deploy-2", {
  onFirstProgress: () => {
    report.sinceFirstSec = (Date.now() - first) / 1000;
    writeFileSync(file("deploy"), "READY");
  },
});
report.reattached = (await reattached).structuredContent;

writeFileSync(file("alpha"), "alpha-waiting");
writeFileSync(file("bravo"), "bravo-waiting");
let started = 0;
const bothStarted = () => {
  if (++started === 2) {
    writeFileSync(file("alpha"), "READY");
    writeFileSync(file("bravo"), "READY");
  }
};
const [alpha, bravo] = await Promise.all([
  wait("alpha", "tok-alpha", { onFirstProgress: bothStarted }),
  wait("bravo", "tok-bravo", { onFirstProgress: bothStarted }),
]);
report.concurrent = { alpha: alpha.structuredContent?.reason, bravo: bravo.structuredContent?.reason };

console.log(JSON.stringify(report));
await client.close();
