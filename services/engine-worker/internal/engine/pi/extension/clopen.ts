// Clopen's pi extension, loaded with `-e` into every pi the adapter starts.
// pi has no permission system and no question tool of its own; this file
// gives it both through the RPC mode's extension UI sub-protocol, whose
// "input" dialog the adapter answers on stdin:
//   - every tool call waits for input("clopen.permit", {toolCallId,
//     toolName, input}); the answer {"allow": bool, "message"?} decides,
//     and a refusal blocks the call with the message as its result;
//   - the AskUserQuestion tool asks input("clopen.ask", {toolCallId,
//     questions}); the answer is {"answers": {question: label}} or
//     {"error": "..."}.
// pi has no MCP client either: the MCP servers listed in the file named by
// CLOPEN_PI_MCP ([{name, url, headers}], streamable HTTP) are connected at
// start-up and each of their tools becomes a tool mcp__<server>__<tool>;
// how each server fared goes to the file named by CLOPEN_PI_MCP_STATUS
// ({name: "connected" | "failed"}).
// The run's permission policy, CLOPEN_PI_POLICY ({allowed, denied}: canonical
// tool names, exact or with a trailing *), withholds tools up front: a tool
// it denies (or an allow list does not admit) is not offered to the model.
import { readFileSync, writeFileSync } from "node:fs";
import { Type } from "typebox";

export default async function clopen(pi: any) {
  const policy = JSON.parse(process.env.CLOPEN_PI_POLICY || "{}");
  const withhold = () => {
    const active: string[] = (pi.getActiveTools() || []).map((t: any) => (typeof t === "string" ? t : t.name));
    const kept = active.filter((name) => !withheld(canonical(name), policy.allowed || [], policy.denied || []));
    if (kept.length !== active.length) pi.setActiveTools(kept);
  };
  pi.on("session_start", async () => withhold());
  pi.on("before_agent_start", async () => {
    withhold();
    return undefined;
  });

  pi.on("tool_call", async (event: any, ctx: any) => {
    if (event.toolName === "AskUserQuestion") return undefined;
    const reply = await ctx.ui.input(
      "clopen.permit",
      JSON.stringify({ toolCallId: event.toolCallId, toolName: event.toolName, input: event.input }),
    );
    const d = parse(reply);
    if (!d || d.allow !== true) {
      return { block: true, reason: (d && d.message) || "Denied by Clopen's permission policy" };
    }
    return undefined;
  });

  pi.registerTool({
    name: "AskUserQuestion",
    label: "Ask the user",
    description:
      "Ask the user one to four multiple-choice questions and wait for the answers. " +
      "Use it when a decision needs the user's input.",
    parameters: Type.Object({
      questions: Type.Array(
        Type.Object({
          question: Type.String({ description: "The question, ending with a question mark" }),
          header: Type.String({ description: "A short label for the question" }),
          options: Type.Array(
            Type.Object({ label: Type.String(), description: Type.String() }),
            { description: "Two to four choices" },
          ),
          multiSelect: Type.Boolean(),
        }),
      ),
    }),
    async execute(toolCallId: string, params: any, _signal: any, _onUpdate: any, ctx: any) {
      const reply = await ctx.ui.input("clopen.ask", JSON.stringify({ toolCallId, questions: params.questions }));
      const d = parse(reply);
      if (!d || d.error || !d.answers) {
        throw new Error((d && d.error) || "The question was not answered");
      }
      const lines = Object.keys(d.answers).map((q) => `${q}: ${d.answers[q]}`);
      return { content: [{ type: "text", text: lines.join("\n") }], details: { answers: d.answers } };
    },
  });

  await bridgeMCP(pi);
}

// canonicalNames are pi's built-in tools under Clopen's canonical names;
// Clopen's own tools (AskUserQuestion, mcp__<server>__<tool>) already are.
const canonicalNames: Record<string, string> = {
  read: "Read", bash: "Bash", edit: "Edit", write: "Write", grep: "Grep", find: "Glob", glob: "Glob", ls: "List",
};

function canonical(name: string): string {
  return canonicalNames[name] || name;
}

// withheld applies a policy to a canonical tool name: denies win, and a
// non-empty allow list admits only what it matches. AskUserQuestion is
// never withheld: it is how the agent talks to the user.
function withheld(tool: string, allowed: string[], denied: string[]): boolean {
  if (tool === "AskUserQuestion") return false;
  const match = (pat: string) => pat === tool || (pat.endsWith("*") && tool.startsWith(pat.slice(0, -1)));
  return denied.some(match) || (allowed.length > 0 && !allowed.some(match));
}

// bridgeMCP registers the tools of the configured MCP servers.
async function bridgeMCP(pi: any) {
  const list = process.env.CLOPEN_PI_MCP;
  if (!list) return;
  const servers: { name: string; url: string; headers?: Record<string, string> }[] = JSON.parse(readFileSync(list, "utf8"));
  const status: Record<string, string> = {};
  for (const server of servers) {
    try {
      const client = new MCPClient(server.url, server.headers || {});
      await client.request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "clopen-pi", version: "1" },
      });
      await client.notify("notifications/initialized");
      const listed = await client.request("tools/list", {});
      for (const tool of listed.tools || []) {
        pi.registerTool({
          name: `mcp__${server.name}__${tool.name}`,
          label: `${server.name}: ${tool.name}`,
          description: tool.description || `The ${tool.name} tool of the ${server.name} MCP server.`,
          parameters: tool.inputSchema || { type: "object", properties: {} },
          async execute(_id: string, params: any, signal: any) {
            const r = await client.request("tools/call", { name: tool.name, arguments: params || {} }, signal);
            const text = (r.content || [])
              .map((c: any) => (c.type === "text" ? c.text : `[${c.type}]`))
              .join("\n");
            if (r.isError) throw new Error(text || "the MCP tool failed");
            return { content: [{ type: "text", text }], details: {} };
          },
        });
      }
      status[server.name] = "connected";
    } catch (err) {
      status[server.name] = "failed";
    }
  }
  if (process.env.CLOPEN_PI_MCP_STATUS) writeFileSync(process.env.CLOPEN_PI_MCP_STATUS, JSON.stringify(status));
}

// MCPClient speaks MCP's streamable HTTP transport: JSON-RPC POSTs
// answered with JSON or with an SSE stream carrying the response.
class MCPClient {
  private next = 0;
  private session = "";
  constructor(private url: string, private headers: Record<string, string>) {}

  async request(method: string, params: any, signal?: any): Promise<any> {
    const id = ++this.next;
    const res = await this.post({ jsonrpc: "2.0", id, method, params }, signal);
    if (!res.ok) throw new Error(`${method}: HTTP ${res.status}`);
    const body = await res.text();
    const msg = (res.headers.get("content-type") || "").includes("text/event-stream") ? fromSSE(body, id) : JSON.parse(body);
    if (msg.error) throw new Error(msg.error.message || `${method} failed`);
    return msg.result || {};
  }

  async notify(method: string): Promise<void> {
    const res = await this.post({ jsonrpc: "2.0", method });
    await res.text();
  }

  private async post(msg: any, signal?: any): Promise<Response> {
    const headers: Record<string, string> = {
      ...this.headers,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    if (this.session) headers["mcp-session-id"] = this.session;
    const res = await fetch(this.url, { method: "POST", headers, body: JSON.stringify(msg), signal });
    const session = res.headers.get("mcp-session-id");
    if (session) this.session = session;
    return res;
  }
}

function fromSSE(body: string, id: number): any {
  for (const line of body.split("\n")) {
    if (!line.startsWith("data:")) continue;
    try {
      const msg = JSON.parse(line.slice(5));
      if (msg.id === id) return msg;
    } catch {
      // not JSON: keep looking
    }
  }
  throw new Error("the MCP server's stream carried no response");
}

function parse(reply: unknown): any {
  if (typeof reply !== "string") return null;
  try {
    return JSON.parse(reply);
  } catch {
    return null;
  }
}
