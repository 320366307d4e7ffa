// An MCP client we did not write (the official TypeScript SDK) driving
// blindexec's OpenAPI query tools (plugins/openapiquery), whose server was
// started with plugins/openapiquery/testdata/fastapi.json as its default
// document.
//
// usage: node openapi_client.mjs http URL [TOKEN]
//        node openapi_client.mjs stdio COMMAND [ARGS...]
//
// Lists the tools, calls every one (successes and error cases) and checks
// the answers. Prints one line per check that failed and a JSON summary;
// exits 1 on any mismatch, 2 on bad usage.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "http" && target) {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else if (mode === "stdio" && target) {
  transport = new StdioClientTransport({ command: target, args: rest, env: { ...process.env }, stderr: "inherit" });
} else {
  console.error("usage: node openapi_client.mjs http URL [TOKEN] | stdio COMMAND [ARGS...]");
  process.exit(2);
}

const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };

const client = new Client({ name: "blindexec-openapi-ts-test", version: "1.0.0" });
await client.connect(transport);

const want = [
  "search_operations", "get_request_schema", "get_response_schema", "build_call_plan",
  "get_api_info", "list_endpoints", "search_endpoints", "get_endpoint_details", "list_schemas", "get_schema_details",
];
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify([...want].sort()), `tools: ${names}`);
for (const t of tools) check(t.inputSchema?.type === "object", `${t.name}: inputSchema ${JSON.stringify(t.inputSchema)}`);

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  const text = r.content?.[0]?.type === "text" ? r.content[0].text : undefined;
  check(typeof text === "string", `${name}: no text content`);
  return { r, text };
}

// Seed 000 tools: JSON text and the same as structuredContent.
async function ok000(name, args, test) {
  const { r, text } = await call(name, args);
  let value;
  try { value = JSON.parse(text); } catch { check(false, `${name}: text is not JSON: ${text}`); return; }
  check(!r.isError, `${name}: isError: ${text}`);
  const structured = Array.isArray(value) ? { operations: value } : value;
  check(JSON.stringify(r.structuredContent) === JSON.stringify(structured), `${name}: structuredContent differs from the text`);
  check(test(value), `${name} ${JSON.stringify(args)}: unexpected ${text.slice(0, 400)}`);
}

async function err000(name, args, code) {
  const { r, text } = await call(name, args);
  let value = {};
  try { value = JSON.parse(text); } catch {}
  check(r.isError === true && value.error?.code === code && typeof value.error?.message === "string" && typeof value.error?.details === "object",
    `${name} ${JSON.stringify(args)}: want error ${code}, got ${text}`);
}

// Seed 003 tools: JSON text (indented) with the result.
async function ok003(name, args, test) {
  const { r, text } = await call(name, args);
  check(!r.isError, `${name}: isError: ${text}`);
  let value;
  try { value = JSON.parse(text); } catch { check(false, `${name}: text is not JSON: ${text}`); return; }
  check(text.includes("\n  "), `${name}: text not indented as JSON.stringify(result, null, 2)`);
  check(test(value), `${name} ${JSON.stringify(args)}: unexpected ${text.slice(0, 400)}`);
}

async function err003(name, args, message) {
  const { r, text } = await call(name, args);
  check(r.isError === true && text === `Error: ${message}`, `${name} ${JSON.stringify(args)}: want "Error: ${message}", got ${JSON.stringify(text)}`);
}

await ok000("search_operations",
  { query: "purchase requisition", match: { tag: true, operationId: true, path: true, summary: true, description: true }, method: null, limit: 5 },
  (v) => v.length === 1 && v[0].operationId === "purchase_requisition_list" && v[0].method === "GET" &&
    v[0].path === "/purchase-requisition" && v[0].summary === "采购申请列表" && v[0].description === null);
await ok000("search_operations", {}, (v) => v.length === 6);
await err000("search_operations", { method: "FETCH" }, "invalid_arguments");

await ok000("get_request_schema", { operationId: "read_item_items__item_id__get" }, (v) =>
  v.method === "GET" && v.path === "/items/{item_id}" &&
  JSON.stringify(v.params.path.required) === '["item_id"]' &&
  v.params.query.properties.q.anyOf.length === 2 &&
  JSON.stringify(v.params.header.required) === '["X-User-Id"]' &&
  v.params.cookie.type === "object" &&
  v.body.selectedContentType === null && v.body.required === false && JSON.stringify(v.body.schema) === "{}" &&
  JSON.stringify(v.components) === "{}");
await err000("get_request_schema", { operationId: "nope" }, "operation_not_found");

await ok000("get_response_schema", { operationId: "delete_item_items__item_id__delete" }, (v) =>
  v.responses["204"].selectedContentType === null && JSON.stringify(v.responses["204"].schema) === "{}" &&
  v.responses["422"].schema.properties.detail.items.title === "ValidationError" && "default" in v.responses);
await err000("get_response_schema", {}, "invalid_arguments");

await ok000("build_call_plan",
  { operationId: "purchase_requisition_list", params: { query: { status: "APPROVED", page: 1, pageSize: 20 }, headers: { "X-User-Id": "123" } } },
  (v) => v.operationId === "purchase_requisition_list" && v.method === "GET" && v.path === "/purchase-requisition" &&
    v.params.query.pageSize === 20 && v.params.headers["X-User-Id"] === "123" && v.params.body === null &&
    JSON.stringify(v.params.path) === "{}" && v.expectedResponses["200"].contentType === "application/json");
await err000("build_call_plan", { operationId: "purchase_requisition_list", params: { query: { pageSize: 500 } } }, "invalid_params");

await ok003("get_api_info", {}, (v) => v.title === "HR API" && v.version === "0.1.0" && v.openapiVersion === "3.1.0");
await ok003("list_endpoints", { method: "GET", limit: 2, offset: 0 }, (v) => v.total === 3 && v.results.length === 2 && Array.isArray(v.results[0].tags));
await err003("list_endpoints", { method: "FETCH" }, "Invalid HTTP method: FETCH");
await ok003("search_endpoints", { query: "item", searchIn: "path" }, (v) => v.total === 4 && v.results.every((r) => typeof r.relevance === "number"));
await err003("search_endpoints", { query: "item", searchIn: "body" }, "Invalid searchIn value: body");
await ok003("get_endpoint_details", { path: "/items/{item_id}", method: "GET" }, (v) =>
  v.parameters.length === 4 && "200" in v.responses && v.responses["422"].description === "Validation Error");
await err003("get_endpoint_details", { path: "/nope", method: "GET" }, "No endpoint found at /nope GET");
await ok003("list_schemas", {}, (v) => v.total === 4 && v.results[0] === "Body_create_file_files__post");
await ok003("get_schema_details", { name: "HTTPValidationError" }, (v) =>
  v.type === "object" && JSON.stringify(v.dependencies) === '["ValidationError"]');
await err003("get_schema_details", { name: "Nope" }, "No schema found with name: Nope");

await client.close();
for (const f of failures) console.error("FAIL " + f);
console.log(JSON.stringify({ tools: names.length, failures: failures.length }));
process.exit(failures.length ? 1 : 0);
