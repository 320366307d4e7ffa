// An MCP client we did not write (the official TypeScript SDK) that
// declares form elicitation and answers it as a person would.
//
// usage: node elicit_client.mjs URL TOKEN TOOL ARGS_JSON accept|decline
//        node elicit_client.mjs stdio TOOL ARGS_JSON accept|decline COMMAND [ARGS...]
//
// Connects over streamable HTTP (the SDK opens the session's GET stream),
// calls TOOL, answers every elicitation with the given action, and prints
// one JSON object: {"asked": [messages], "result": CallToolResult}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
let transport, tool, args, action;
if (argv[0] === "stdio" && argv.length >= 5) {
  const [, t, a, act, command, ...rest] = argv;
  [tool, args, action] = [t, a, act];
  transport = new StdioClientTransport({ command, args: rest, env: { ...process.env }, stderr: "inherit" });
} else if (argv.length >= 5) {
  const [url, token, t, a, act] = argv;
  [tool, args, action] = [t, a, act];
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  console.error("usage: node elicit_client.mjs URL TOKEN TOOL ARGS_JSON accept|decline | stdio TOOL ARGS_JSON accept|decline COMMAND [ARGS...]");
  process.exit(2);
}
const client = new Client({ name: "blindexec-ts-elicit", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return action === "accept" ? { action: "accept", content: {} } : { action: "decline" };
});
await client.connect(transport);
// Over HTTP the GET stream opens after initialization: give it a moment.
await new Promise((r) => setTimeout(r, 300));
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ asked, result }));
await client.close();
