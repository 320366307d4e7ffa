// The official TypeScript SDK's client listing a server's tools and
// calling several, each call's refusal recorded rather than thrown.
//
// usage: node calls_client.mjs URL TOKEN ARGS_JSON TOOL...   (streamable HTTP)
//
// Prints one JSON object: {"tools": [names...], "calls": {TOOL: {"isError": bool,
// "protocolError": "..." when the server answered a JSON-RPC error}}}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, args, ...names] = process.argv.slice(2);
if (!url || !token || !args || names.length === 0) {
  console.error("usage: node calls_client.mjs URL TOKEN ARGS_JSON TOOL...");
  process.exit(2);
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "blindexec-ts-calls", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const calls = {};
for (const name of names) {
  try {
    const result = await client.callTool({ name, arguments: JSON.parse(args) });
    calls[name] = { isError: Boolean(result.isError) };
  } catch (e) {
    calls[name] = { isError: true, protocolError: String(e.message) };
  }
}
console.log(JSON.stringify({ tools: tools.map((t) => t.name), calls }));
await client.close();
