// A second, independent MCP client for durawait's end-to-end tests: the
// official TypeScript SDK. It lists the tools, calls a re-exposed tool and
// wait_for (with progress), and prints what it saw as one JSON line. The SDK
// validates wait_for's structuredContent against its declared output schema.
//
// usage: node client.mjs http URL FILE
//        node client.mjs stdio DURAWAIT CONFIG FILE
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { writeFileSync } from "node:fs";

const [mode, ...rest] = process.argv.slice(2);
let transport, file;
if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
  file = rest[1];
} else if (mode === "stdio") {
  transport = new StdioClientTransport({
    command: rest[0],
    args: ["serve", "--stdio", "--config", rest[1], "--engine-port", "0", "--ui-port", "0"],
    stderr: "ignore",
  });
  file = rest[2];
} else {
  console.error("usage: client.mjs http URL FILE | stdio DURAWAIT CONFIG FILE");
  process.exit(2);
}

const client = new Client({ name: "durawait-e2e-node", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
writeFileSync(file, "starting");
const readFile = await client.callTool({ name: "read_file", arguments: { path: file } });

let progress = 0;
setTimeout(() => writeFileSync(file, "READY"), 2500);
const wait = await client.callTool(
  {
    name: "wait_for",
    arguments: { probe: { tool: "read_file", args: { path: file } }, until: { matches: "READY" }, poll_sec: 1, max_wait_sec: 60 },
  },
  undefined,
  { onprogress: () => { progress++; }, timeout: 120000 },
);
const invalid = await client.callTool({ name: "wait_for", arguments: { probe: { tool: "read_file" }, until: {} } });

console.log(JSON.stringify({
  tools: tools.map((t) => t.name).sort(),
  waitForAnnotations: tools.find((t) => t.name === "wait_for")?.annotations,
  readFile: readFile.content?.[0]?.text,
  wait: wait.structuredContent,
  waitIsError: wait.isError ?? false,
  progress,
  invalid: { isError: invalid.isError, text: invalid.content?.[0]?.text },
}));
await client.close();
