// Drives the official @google/genai client against the gateway's /genai
// drop-in prefix: BASE_URL is the prefix (the SDK appends /v1beta/models/...),
// MODEL a bare Gemini name or any "<provider>/<model>".
import { GoogleGenAI } from "@google/genai";

const ai = new GoogleGenAI({ apiKey: "caller-key", httpOptions: { baseUrl: process.env.BASE_URL } });
const model = process.env.MODEL;
const tools = [{ functionDeclarations: [{ name: "lookup", description: "look up", parameters: { type: "OBJECT", properties: { echo: { type: "STRING" } } } }] }];
const out = {};

const r = await ai.models.generateContent({ model, contents: "hi" });
out.generate = { text: r.text, usage: r.usageMetadata, finish: r.candidates?.[0]?.finishReason };

const tr = await ai.models.generateContent({ model, contents: "hi", config: { tools } });
out.tool = { calls: tr.functionCalls ?? null, usage: tr.usageMetadata };

const s = await ai.models.generateContentStream({ model, contents: "hi", config: { tools } });
let text = "", usage = null;
const calls = [];
for await (const ch of s) {
  for (const p of ch.candidates?.[0]?.content?.parts ?? []) {
    if (p.text) text += p.text;
    if (p.functionCall) calls.push(p.functionCall);
  }
  if (ch.usageMetadata) usage = ch.usageMetadata;
}
const s2 = await ai.models.generateContentStream({ model, contents: "hi" });
for await (const ch of s2) text += ch.text ?? "";
out.stream = { text, calls, usage };

const pager = await ai.models.list();
out.models = [];
for await (const m of pager) out.models.push(m.name);

if (process.env.EMBED_MODEL) {
  const e = await ai.models.embedContent({ model: process.env.EMBED_MODEL, contents: "hello" });
  out.embed = { n: e.embeddings?.length ?? 0, dims: e.embeddings?.[0]?.values?.length ?? 0 };
}
if (process.env.COUNT) {
  const n = await ai.models.countTokens({ model, contents: "hello there" });
  out.count = n.totalTokens;
}

try {
  await ai.models.generateContent({ model: "groq/llama-3.1-8b-instant", contents: "hi" });
  out.error = null;
} catch (e) {
  out.error = { status: e.status, message: e.message };
}
console.log(JSON.stringify(out));
