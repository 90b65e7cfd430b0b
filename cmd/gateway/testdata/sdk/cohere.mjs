// Drives the official cohere-ai client (v2 API) against the gateway's
// /cohere drop-in prefix: BASE_URL is the prefix (the SDK appends /v2/chat),
// MODEL a bare Cohere name or any "<provider>/<model>".
import { CohereClientV2 } from "cohere-ai";

const co = new CohereClientV2({ token: "caller-key", environment: process.env.BASE_URL });
const model = process.env.MODEL;
const tools = [{ type: "function", function: { name: "lookup", description: "look up", parameters: { type: "object", properties: { echo: { type: "string" } } } } }];
const out = {};

const r = await co.chat({ model, messages: [{ role: "user", content: "hi" }] });
out.chat = { text: r.message?.content?.map((c) => c.text).join("") ?? "", usage: r.usage?.tokens, finish: r.finishReason };

const tr = await co.chat({ model, messages: [{ role: "user", content: "hi" }], tools });
const tc = tr.message?.toolCalls?.[0];
out.tool = { name: tc?.function?.name, args: tc?.function?.arguments, finish: tr.finishReason, usage: tr.usage?.tokens };

const s = await co.chatStream({ model, messages: [{ role: "user", content: "hi" }], tools });
let text = "", args = "", name = null, usage = null, finish = null;
for await (const ev of s) {
  if (ev.type === "content-delta") text += ev.delta?.message?.content?.text ?? "";
  if (ev.type === "tool-call-start") { name = ev.delta?.message?.toolCalls?.function?.name; args += ev.delta?.message?.toolCalls?.function?.arguments ?? ""; }
  if (ev.type === "tool-call-delta") args += ev.delta?.message?.toolCalls?.function?.arguments ?? "";
  if (ev.type === "message-end") { usage = ev.delta?.usage?.tokens; finish = ev.delta?.finishReason; }
}
out.stream = { text, args, name, usage, finish };

if (process.env.EMBED_MODEL) {
  const e = await co.embed({ model: process.env.EMBED_MODEL, texts: ["hello", "world"], inputType: "search_document", embeddingTypes: ["float"] });
  out.embed = { n: e.embeddings?.float?.length ?? 0, dims: e.embeddings?.float?.[0]?.length ?? 0 };
}
if (process.env.RERANK_MODEL) {
  const rr = await co.rerank({ model: process.env.RERANK_MODEL, query: "hello", documents: ["hello there", "unrelated"], topN: 2 });
  out.rerank = rr.results.map((x) => ({ index: x.index, score: x.relevanceScore }));
}

try {
  await co.chat({ model: "groq/llama-3.1-8b-instant", messages: [{ role: "user", content: "hi" }] });
  out.error = null;
} catch (e) {
  out.error = { status: e.statusCode, body: e.body };
}
console.log(JSON.stringify(out));
