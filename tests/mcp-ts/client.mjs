// An MCP client we did not write (the official TypeScript SDK) driving
// blindexec's catalog server.
//
// usage: node client.mjs URL TOKEN TOOL [ARGS_JSON]          (streamable HTTP)
//        node client.mjs stdio TOOL ARGS_JSON COMMAND [ARGS...] (stdio: COMMAND is the server)
//
// Lists the tools, calls TOOL with ARGS_JSON, and prints one JSON object:
// {"tools": [{name, description, inputSchema}...], "result": CallToolResult}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
let transport, tool, args;
if (argv[0] === "stdio" && argv.length >= 4) {
  const [, t, a, command, ...rest] = argv;
  [tool, args] = [t, a];
  transport = new StdioClientTransport({ command, args: rest, env: { ...process.env }, stderr: "inherit" });
} else if (argv.length >= 3) {
  const [url, token, t, a] = argv;
  [tool, args] = [t, a];
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  console.error("usage: node client.mjs URL TOKEN TOOL [ARGS_JSON] | stdio TOOL ARGS_JSON COMMAND [ARGS...]");
  process.exit(2);
}
const client = new Client({ name: "blindexec-ts-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args || "{}") });
console.log(JSON.stringify({ tools, result }));
await client.close();
