// A second MCP implementation checks writ mcp: the official TypeScript SDK's
// client starts `writ mcp ARGS...` over stdio, lists the tools, calls echo,
// and prints one JSON line: the tool names and the call's result.
// Usage: NODE_PATH=.npm-mcp/node_modules node mcp_client.cjs WRIT ARGS...
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

async function main() {
  const [writ, ...args] = process.argv.slice(2);
  const transport = new StdioClientTransport({ command: writ, args: ["mcp", ...args], stderr: "inherit" });
  const client = new Client({ name: "writ-interop", version: "1" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: "echo", arguments: { msg: "from typescript" } });
  console.log(JSON.stringify({ server: client.getServerVersion(), tools: tools.map((t) => t.name).sort(), result }));
  await client.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
