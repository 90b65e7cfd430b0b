// Drives the official openai npm client against the gateway. The Go test
// (cmd/gateway/sdk_test.go) starts the gateway and a fake upstream, runs
// this script with BASE_URL and MODEL, and asserts the JSON it prints.
import OpenAI from "openai";

const client = new OpenAI({ apiKey: process.env.API_KEY || "sk-test", baseURL: process.env.BASE_URL, maxRetries: 0 });
const model = process.env.MODEL;
const embedModel = process.env.EMBED_MODEL;
const out = {};

const models = await client.models.list();
out.models = [];
for await (const m of models) out.models.push(m.id);

const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
out.chat = { content: chat.choices[0].message.content, usage: chat.usage };

const stream = await client.chat.completions.create({
  model, stream: true, stream_options: { include_usage: true },
  messages: [{ role: "user", content: "hi" }],
  tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
});
let text = "", args = "", usage = null;
for await (const ch of stream) {
  for (const c of ch.choices) {
    text += c.delta.content ?? "";
    for (const tc of c.delta.tool_calls ?? []) args += tc.function?.arguments ?? "";
  }
  if (ch.usage) usage = ch.usage;
}
out.chatStream = { text, args, usage };

const resp = await client.responses.create({ model, input: "hi" });
out.responses = { text: resp.output_text, usage: resp.usage };

const rs = await client.responses.create({ model, input: "hi", stream: true });
let rtext = "", completed = null;
for await (const ev of rs) {
  if (ev.type === "response.output_text.delta") rtext += ev.delta;
  if (ev.type === "response.completed") completed = ev.response;
}
out.responsesStream = { text: rtext, usage: completed?.usage ?? null };

if (embedModel) {
  const emb = await client.embeddings.create({ model: embedModel, input: "hello" });
  out.embeddings = { dims: emb.data[0].embedding.length, first: emb.data[0].embedding[0] };
}

console.log(JSON.stringify(out));
