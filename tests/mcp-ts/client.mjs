// An MCP client we did not write (the official TypeScript SDK) driving
// blindexec's catalog server.
//
// usage: node client.mjs URL TOKEN TOOL ARGS_JSON
//
// Lists the tools, calls TOOL with ARGS_JSON, and prints one JSON object:
// {"tools": [{name, description, inputSchema}...], "result": CallToolResult}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool, args] = process.argv.slice(2);
if (!url || !token || !tool) {
  console.error("usage: node client.mjs URL TOKEN TOOL [ARGS_JSON]");
  process.exit(2);
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "blindexec-ts-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args || "{}") });
console.log(JSON.stringify({ tools, result }));
await client.close();
