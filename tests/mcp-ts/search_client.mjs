// The official TypeScript SDK's client on a catalog too large to list:
// it searches, waits for notifications/tools/list_changed, lists again,
// then calls the found tool directly and through call_tool.
//
// usage: node search_client.mjs URL TOKEN QUERY TOOL ARGS_JSON
//
// Prints one JSON object: {"before": [names], "search": CallToolResult,
// "after": [names], "direct": CallToolResult, "viaCallTool": CallToolResult}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, query, tool, args] = process.argv.slice(2);
if (!url || !token || !query || !tool) {
  console.error("usage: node search_client.mjs URL TOKEN QUERY TOOL [ARGS_JSON]");
  process.exit(2);
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "blindexec-ts-search-test", version: "1.0.0" });
let notified;
const changed = new Promise((resolve) => { notified = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => notified());
await client.connect(transport);

const names = async () => (await client.listTools()).tools.map((t) => t.name);
const before = await names();
const search = await client.callTool({ name: "search_tools", arguments: { query } });
let timer;
await Promise.race([
  changed,
  new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("no notifications/tools/list_changed within 10 s")), 10000); }),
]);
clearTimeout(timer);
const after = await names();
const toolArgs = JSON.parse(args || "{}");
const direct = await client.callTool({ name: tool, arguments: toolArgs });
const viaCallTool = await client.callTool({ name: "call_tool", arguments: { name: tool, arguments: toolArgs } });
console.log(JSON.stringify({ before, search, after, direct, viaCallTool }));
await client.close();
