// Drives the official @aws-sdk/client-bedrock-runtime client (Converse and
// ConverseStream) against the gateway's /bedrock drop-in prefix: BASE_URL
// is the endpoint override, MODEL a Bedrock model id or any
// "<provider>/<model>". The credentials are fake: the gateway reads the
// access key id from the SigV4 Authorization and checks no signature.
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";

const client = new BedrockRuntimeClient({
  region: "us-east-1", endpoint: process.env.BASE_URL, maxAttempts: 1,
  credentials: { accessKeyId: "AKIDCALLER", secretAccessKey: "fake-secret" },
  // The client defaults to HTTP/2 (for bidirectional streams), which a
  // plain-http endpoint does not speak; Converse needs only HTTP/1.1.
  requestHandler: new NodeHttpHandler(),
});
const modelId = process.env.MODEL;
const messages = [{ role: "user", content: [{ text: "hi" }] }];
const toolConfig = { tools: [{ toolSpec: { name: "lookup", description: "look up", inputSchema: { json: { type: "object", properties: { echo: { type: "string" } } } } } }] };
const out = {};

const r = await client.send(new ConverseCommand({ modelId, messages, inferenceConfig: { maxTokens: 64 } }));
out.converse = { text: r.output.message.content.map((c) => c.text ?? "").join(""), usage: r.usage, stop: r.stopReason };

const tr = await client.send(new ConverseCommand({ modelId, messages, toolConfig }));
const tu = tr.output.message.content.find((c) => c.toolUse)?.toolUse;
out.tool = { name: tu?.name, input: tu?.input, stop: tr.stopReason, usage: tr.usage };

const s = await client.send(new ConverseStreamCommand({ modelId, messages, toolConfig }));
let text = "", args = "", name = null, usage = null, stop = null;
for await (const ev of s.stream) {
  if (ev.contentBlockStart?.start?.toolUse) name = ev.contentBlockStart.start.toolUse.name;
  if (ev.contentBlockDelta?.delta?.text) text += ev.contentBlockDelta.delta.text;
  if (ev.contentBlockDelta?.delta?.toolUse) args += ev.contentBlockDelta.delta.toolUse.input;
  if (ev.messageStop) stop = ev.messageStop.stopReason;
  if (ev.metadata) usage = ev.metadata.usage;
}
const s2 = await client.send(new ConverseStreamCommand({ modelId, messages }));
for await (const ev of s2.stream) if (ev.contentBlockDelta?.delta?.text) text += ev.contentBlockDelta.delta.text;
out.stream = { text, args, name, usage, stop };

try {
  await client.send(new ConverseCommand({ modelId: "groq/llama-3.1-8b-instant", messages }));
  out.error = null;
} catch (e) {
  out.error = { status: e.$metadata?.httpStatusCode, name: e.name, message: e.message };
}
console.log(JSON.stringify(out));
