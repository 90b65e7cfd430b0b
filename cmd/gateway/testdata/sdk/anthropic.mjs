// Drives the official @anthropic-ai/sdk client against the gateway's
// /anthropic drop-in prefix. BASE_URL is the prefix (e.g.
// http://host/anthropic), MODEL any "<provider>/<model>" or a bare
// Anthropic name; AUTH=token sends the key as Authorization: Bearer
// (authToken), otherwise as x-api-key (apiKey).
import Anthropic from "@anthropic-ai/sdk";

const opts = { baseURL: process.env.BASE_URL, maxRetries: 0 };
if (process.env.AUTH === "token") opts.authToken = "caller-token";
else opts.apiKey = "caller-key";
const client = new Anthropic(opts);
const model = process.env.MODEL;
const tools = [{ name: "lookup", description: "look up", input_schema: { type: "object", properties: { echo: { type: "string" } } } }];
const out = {};

const msg = await client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
out.message = { text: msg.content.filter((b) => b.type === "text").map((b) => b.text).join(""), usage: msg.usage, stop: msg.stop_reason, role: msg.role };

const toolMsg = await client.messages.create({ model, max_tokens: 64, tools, messages: [{ role: "user", content: "hi" }] });
const tu = toolMsg.content.find((b) => b.type === "tool_use");
out.toolMessage = { name: tu?.name, input: tu?.input, stop: toolMsg.stop_reason, usage: toolMsg.usage };

// Raw events, so every delta (text and tool arguments) is checked as sent.
const stream = await client.messages.create({ model, max_tokens: 64, stream: true, tools, messages: [{ role: "user", content: "hi" }] });
let text = "", args = "", input = 0, output = 0, stop = null;
const events = [];
for await (const ev of stream) {
  events.push(ev.type);
  if (ev.type === "message_start") input = ev.message.usage.input_tokens;
  if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
  if (ev.type === "content_block_delta" && ev.delta.type === "input_json_delta") args += ev.delta.partial_json;
  if (ev.type === "message_delta") { output = ev.usage.output_tokens; input = ev.usage.input_tokens ?? input; stop = ev.delta.stop_reason; }
}
out.stream = { text, args, input, output, stop, events };

// The SDK's accumulating helper must assemble the same message.
const helper = client.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
const final = await helper.finalMessage();
out.helper = { text: final.content.filter((b) => b.type === "text").map((b) => b.text).join(""), usage: final.usage };

const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;

if (process.env.COUNT) {
  const n = await client.messages.countTokens({ model, messages: [{ role: "user", content: "hello there" }] });
  out.count = n.input_tokens;
}

try {
  await client.messages.create({ model: "groq/llama-3.1-8b-instant", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
  out.error = null;
} catch (e) {
  out.error = { status: e.status, type: e.error?.error?.type, message: e.error?.error?.message };
}

console.log(JSON.stringify(out));
