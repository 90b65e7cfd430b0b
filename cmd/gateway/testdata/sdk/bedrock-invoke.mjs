// Drives the official @aws-sdk/client-bedrock-runtime InvokeModel and
// InvokeModelWithResponseStream against the gateway's /bedrock prefix.
// BASE_URL is the endpoint override, MODEL a Bedrock model id or any
// "<provider>/<model>", FORMAT the native body: "anthropic" (Messages on
// Bedrock, anthropic_version bedrock-2023-05-31) or "nova".
import { BedrockRuntimeClient, InvokeModelCommand, InvokeModelWithResponseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";

const client = new BedrockRuntimeClient({
  region: "us-east-1", endpoint: process.env.BASE_URL, maxAttempts: 1,
  credentials: { accessKeyId: "AKIDCALLER", secretAccessKey: "fake-secret" },
  requestHandler: new NodeHttpHandler(),
});
const modelId = process.env.MODEL;
const anthropic = process.env.FORMAT === "anthropic";
const schema = { type: "object", properties: { echo: { type: "string" } } };

function body(withTool) {
  if (anthropic) {
    const b = { anthropic_version: "bedrock-2023-05-31", max_tokens: 64, messages: [{ role: "user", content: "hi" }] };
    if (withTool) b.tools = [{ name: "lookup", description: "look up", input_schema: schema }];
    return b;
  }
  const b = { schemaVersion: "messages-v1", messages: [{ role: "user", content: [{ text: "hi" }] }], inferenceConfig: { maxTokens: 64 } };
  if (withTool) b.toolConfig = { tools: [{ toolSpec: { name: "lookup", description: "look up", inputSchema: { json: schema } } }] };
  return b;
}
const enc = (b) => new TextEncoder().encode(JSON.stringify(b));
const dec = (u8) => JSON.parse(new TextDecoder().decode(u8));

// Normalises an answer of either format to {text, tool, input, stop, usage}.
function answer(r) {
  if (anthropic) {
    const tu = r.content.find((c) => c.type === "tool_use");
    return { text: r.content.filter((c) => c.type === "text").map((c) => c.text).join(""), tool: tu?.name, input: tu?.input,
      stop: r.stop_reason, usage: { input: r.usage.input_tokens, output: r.usage.output_tokens } };
  }
  const c = r.output.message.content;
  const tu = c.find((x) => x.toolUse)?.toolUse;
  return { text: c.map((x) => x.text ?? "").join(""), tool: tu?.name, input: tu?.input, stop: r.stopReason,
    usage: { input: r.usage.inputTokens, output: r.usage.outputTokens } };
}

// sent is ceil(bytes/4) of the body sent: the fake upstream's token
// count of a body that reached it unchanged.
const sent = (b) => Math.ceil(b.length / 4);

async function invoke(withTool) {
  const b = enc(body(withTool));
  const r = await client.send(new InvokeModelCommand({ modelId, contentType: "application/json", accept: "application/json", body: b }));
  return { ...answer(dec(r.body)), sent: sent(b) };
}

async function stream(withTool) {
  const b = enc(body(withTool));
  const r = await client.send(new InvokeModelWithResponseStreamCommand({ modelId, contentType: "application/json", body: b }));
  const s = { text: "", args: "", tool: null, stop: null, usage: { input: null, output: null }, metrics: null, events: 0, sent: sent(b) };
  for await (const ev of r.body) {
    if (!ev.chunk) throw new Error("unexpected event " + JSON.stringify(ev));
    const e = dec(ev.chunk.bytes);
    s.events++;
    if (e["amazon-bedrock-invocationMetrics"]) s.metrics = e["amazon-bedrock-invocationMetrics"];
    if (anthropic) {
      if (e.type === "message_start") s.usage.input = e.message.usage.input_tokens;
      if (e.type === "content_block_start" && e.content_block.type === "tool_use") s.tool = e.content_block.name;
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") s.text += e.delta.text;
      if (e.type === "content_block_delta" && e.delta.type === "input_json_delta") s.args += e.delta.partial_json;
      if (e.type === "message_delta") {
        s.stop = e.delta.stop_reason;
        s.usage.output = e.usage.output_tokens;
        if (e.usage.input_tokens != null) s.usage.deltaInput = e.usage.input_tokens;
      }
    } else {
      if (e.contentBlockStart?.start?.toolUse) s.tool = e.contentBlockStart.start.toolUse.name;
      if (e.contentBlockDelta?.delta?.text) s.text += e.contentBlockDelta.delta.text;
      if (e.contentBlockDelta?.delta?.toolUse) s.args += e.contentBlockDelta.delta.toolUse.input;
      if (e.messageStop) s.stop = e.messageStop.stopReason;
      if (e.metadata) s.usage = { input: e.metadata.usage.inputTokens, output: e.metadata.usage.outputTokens };
    }
  }
  return s;
}

const out = { invoke: await invoke(false), tool: await invoke(true), stream: await stream(true) };
try {
  await client.send(new InvokeModelCommand({ modelId: "groq/llama-3.1-8b-instant", contentType: "application/json", body: enc(body(false)) }));
  out.error = null;
} catch (e) {
  out.error = { status: e.$metadata?.httpStatusCode, name: e.name, message: e.message };
}
console.log(JSON.stringify(out));
