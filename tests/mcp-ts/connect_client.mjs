// An MCP client we did not write (the official TypeScript SDK) calling a
// tool that needs the user to connect an account (issue 34).
//
// usage: node connect_client.mjs URL TOKEN TOOL ARGS_JSON url|none
//
// Declares URL-mode elicitation ("url") or none, calls TOOL over
// streamable HTTP, and prints one JSON object: {"result": CallToolResult}
// or, when the call is answered with an error (URL elicitation required),
// {"error": {"code", "message", "elicitations"}}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UrlElicitationRequiredError } from "@modelcontextprotocol/sdk/types.js";

const [url, token, tool, args, mode] = process.argv.slice(2);
if (!mode) {
  console.error("usage: node connect_client.mjs URL TOKEN TOOL ARGS_JSON url|none");
  process.exit(2);
}
const capabilities = mode === "url" ? { elicitation: { url: {} } } : {};
const client = new Client({ name: "blindexec-ts-connect", version: "1.0.0" }, { capabilities });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
try {
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  console.log(JSON.stringify({ result }));
} catch (e) {
  const elicitations = e instanceof UrlElicitationRequiredError ? e.elicitations : undefined;
  console.log(JSON.stringify({ error: { code: e.code, message: e.message, elicitations } }));
}
await client.close();
