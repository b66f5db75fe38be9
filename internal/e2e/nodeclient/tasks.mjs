// Durable MCP tasks through the official TypeScript SDK's tasks client
// (protocol 2025-11-25). Two phases, so that the Go test can kill -9
// durawait between them:
//
//   node tasks.mjs create URL DIR         starts a task-augmented wait_for on DIR/job
//   node tasks.mjs finish URL DIR TASKID  reads, lists and finishes that task on a
//                                         new connection, then cancels another one,
//                                         runs a third through callToolStream, and
//                                         sends two calls that cannot be tasks
//   node tasks.mjs one URL DIR TOOL ARGS  runs one task-augmented call of TOOL with the
//                                         JSON ARGS to its result, writing its task ID
//                                         to DIR/task-created once it has one
//
// Each phase prints what it saw as one JSON line; the Go test judges it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const [phase, url, dir, taskId, argsJSON] = process.argv.slice(2);
const file = (name) => join(dir, name);
const waitArgs = (name) => ({
  probe: { tool: "read_file", args: { path: file(name) } },
  until: { matches: "READY" },
  poll_sec: 1,
  max_wait_sec: 60,
});

const client = new Client({ name: "durawait-e2e-node-tasks", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const tasks = client.experimental.tasks;

// createTask sends a task-augmented tools/call and returns its task.
async function createTask(name, args) {
  const res = await client.request(
    { method: "tools/call", params: { name, arguments: args, task: { ttl: 60000 } } },
    CreateTaskResultSchema,
  );
  return res.task;
}

// rpcError returns the message of the JSON-RPC error fn throws, or "".
async function rpcError(fn) {
  try {
    await fn();
    return "";
  } catch (err) {
    return String(err?.message ?? err);
  }
}

const report = {};
if (phase === "create") {
  const { tools } = await client.listTools();
  report.taskSupport = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? ""]));
  report.capabilities = client.getServerCapabilities()?.tasks ?? null;
  writeFileSync(file("job"), "queued");
  report.task = await createTask("wait_for", waitArgs("job"));
} else if (phase === "finish") {
  report.afterRestart = await tasks.getTask(taskId);
  report.listed = (await tasks.listTasks()).tasks.map((t) => t.taskId);
  writeFileSync(file("job"), "READY");
  report.result = await tasks.getTaskResult(taskId, CallToolResultSchema);
  report.final = await tasks.getTask(taskId);

  writeFileSync(file("other"), "waiting");
  const other = await createTask("wait_for", waitArgs("other"));
  report.cancelled = await tasks.cancelTask(other.taskId);
  report.cancelledGet = await tasks.getTask(other.taskId);
  report.cancelAgain = await rpcError(() => tasks.cancelTask(other.taskId));

  // The SDK's own task flow: created, polled with tasks/get, then the result.
  writeFileSync(file("streamed"), "waiting");
  report.stream = [];
  for await (const msg of tasks.callToolStream({ name: "wait_for", arguments: waitArgs("streamed") }, CallToolResultSchema, { task: { ttl: 60000 } })) {
    report.stream.push(msg.type);
    if (msg.type === "taskCreated") writeFileSync(file("streamed"), "READY");
    if (msg.type === "result") report.streamResult = msg.result.structuredContent;
    if (msg.type === "error") report.streamError = String(msg.error?.message ?? msg.error);
  }

  report.badArgs = await rpcError(() => createTask("wait_for", { probe: { tool: "read_file" }, until: {} }));
  report.notATask = await rpcError(() => createTask("read_file", { path: file("job") }));
  report.unknownTask = await rpcError(() => tasks.getTask("wait_for/nope@nope"));
} else if (phase === "one") {
  const tool = taskId;
  report.task = await createTask(tool, JSON.parse(argsJSON));
  writeFileSync(file("task-created"), report.task.taskId);
  report.result = await tasks.getTaskResult(report.task.taskId, CallToolResultSchema);
  report.final = await tasks.getTask(report.task.taskId);
} else {
  console.error("usage: tasks.mjs create URL DIR | finish URL DIR TASKID | one URL DIR TOOL ARGS");
  process.exit(2);
}
console.log(JSON.stringify(report));
await client.close();
