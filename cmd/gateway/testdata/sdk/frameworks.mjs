// Drives framework clients against the gateway: the Vercel AI SDK (ai +
// @ai-sdk/openai chat and Responses, @ai-sdk/anthropic) on the /openai and
// /anthropic drop-in prefixes, and LangChain (@langchain/openai,
// @langchain/anthropic) on the /langchain framework prefix. GATEWAY is the
// gateway's root URL, MODEL any "<provider>/<model>". For each client it
// prints text, tool-call arguments and token counts, streamed and not.
import { generateText, streamText, tool, jsonSchema } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { ChatOpenAI } from "@langchain/openai";
import { ChatAnthropic } from "@langchain/anthropic";

const gw = process.env.GATEWAY;
const model = process.env.MODEL;
const schema = { type: "object", properties: { echo: { type: "string" } } };
const out = {};

async function vercel(m) {
  const tools = { lookup: tool({ description: "look up", inputSchema: jsonSchema(schema) }) };
  const r = await generateText({ model: m, prompt: "hi", tools, maxRetries: 0 });
  const s = streamText({ model: m, prompt: "hi", tools, maxRetries: 0 });
  let text = "", args = "", call = null;
  for await (const p of s.fullStream) {
    if (p.type === "text-delta") text += p.text;
    if (p.type === "tool-input-delta") args += p.delta;
    if (p.type === "tool-call") call = p.input;
    if (p.type === "error") throw p.error;
  }
  const su = await s.usage;
  return {
    text: r.text, args: JSON.stringify(r.toolCalls[0]?.input ?? null), input: r.usage.inputTokens, output: r.usage.outputTokens,
    streamText: text, streamArgs: args, streamCall: JSON.stringify(call), streamInput: su.inputTokens, streamOutput: su.outputTokens,
  };
}

async function langchain(chat) {
  const bound = chat.bindTools([{ type: "function", function: { name: "lookup", description: "look up", parameters: schema } }]);
  const r = await bound.invoke("hi");
  let acc = null;
  for await (const ch of await bound.stream("hi")) acc = acc ? acc.concat(ch) : ch;
  const text = (m) => (typeof m.content === "string" ? m.content : m.content.filter((c) => c.type === "text").map((c) => c.text).join(""));
  return {
    text: text(r), args: JSON.stringify(r.tool_calls?.[0]?.args ?? null), input: r.usage_metadata?.input_tokens, output: r.usage_metadata?.output_tokens,
    streamText: text(acc), streamArgs: (acc.tool_call_chunks ?? []).map((c) => c.args ?? "").join(""), streamCall: JSON.stringify(acc.tool_calls?.[0]?.args ?? null),
    streamInput: acc.usage_metadata?.input_tokens, streamOutput: acc.usage_metadata?.output_tokens,
  };
}

// tapFetch records the usage the Anthropic stream carried on the wire
// (message_start and message_delta), so the test can check what LangChain
// reports against it.
const wire = {};
async function tapFetch(url, init) {
  const resp = await fetch(url, init);
  if (!(resp.headers.get("content-type") ?? "").startsWith("text/event-stream")) return resp;
  const [mine, theirs] = resp.body.tee();
  (async () => {
    const text = await new Response(mine).text();
    for (const line of text.split("\n")) {
      if (!line.startsWith("data: ")) continue;
      const ev = JSON.parse(line.slice(6));
      if (ev.type === "message_start") Object.assign(wire, { startInput: ev.message.usage.input_tokens, startOutput: ev.message.usage.output_tokens });
      if (ev.type === "message_delta") Object.assign(wire, { deltaInput: ev.usage.input_tokens, deltaOutput: ev.usage.output_tokens });
    }
  })();
  return new Response(theirs, { status: resp.status, statusText: resp.statusText, headers: resp.headers });
}

const openai = createOpenAI({ baseURL: gw + "/openai/v1", apiKey: "caller-key" });
out.vercelChat = await vercel(openai.chat(model));
out.vercelResponses = await vercel(openai(model));
const anthropic = createAnthropic({ baseURL: gw + "/anthropic/v1", apiKey: "caller-key" });
out.vercelAnthropic = await vercel(anthropic(model));
out.langchainOpenAI = await langchain(new ChatOpenAI({ model, apiKey: "caller-key", maxRetries: 0, configuration: { baseURL: gw + "/langchain/v1" } }));
out.langchainAnthropic = await langchain(new ChatAnthropic({ model, apiKey: "caller-key", maxRetries: 0, anthropicApiUrl: gw + "/langchain/anthropic", clientOptions: { fetch: tapFetch } }));
out.langchainAnthropicWire = wire;
console.log(JSON.stringify(out));
