// Reads the gateway's converted streams with the official openai client.
// Usage: node client.js <baseURL>. Prints one JSON line of what the client
// assembled, which the Go test asserts.
const OpenAI = require('openai');

async function main() {
  const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'test', maxRetries: 0 });
  const out = {};

  // The helper most applications use: events accumulated into a snapshot.
  const stream = client.responses.stream({ model: 'anthropic/claude-sonnet-4', input: 'Weather and time?' });
  const names = [];
  stream.on('event', (e) => names.push(e.type));
  const final = await stream.finalResponse();
  out.helper = {
    // finalResponse() sets output_text only when it parses structured
    // output, with OpenAI too: join the message texts as applications do.
    output_text: final.output
      .filter((o) => o.type === 'message')
      .flatMap((o) => o.content.filter((c) => c.type === 'output_text').map((c) => c.text))
      .join(''),
    calls: final.output.filter((o) => o.type === 'function_call').map((o) => [o.name, o.call_id, o.arguments]),
    status: final.status,
    usage: final.usage,
    events: names.length,
  };

  // The raw iterator: typed events as they arrive.
  const raw = await client.responses.create({ model: 'anthropic/claude-sonnet-4', input: 'Weather and time?', stream: true });
  let text = '';
  const args = {};
  let completed = null;
  for await (const e of raw) {
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.function_call_arguments.delta') args[e.item_id] = (args[e.item_id] || '') + e.delta;
    if (e.type === 'response.completed') completed = e.response.output.length;
  }
  out.raw = { text, args, completed_items: completed };

  // Non-streamed Responses: the SDK adds output_text from the items.
  const resp = await client.responses.create({ model: 'anthropic/claude-sonnet-4', input: 'Weather?' });
  out.nonstream = { output_text: resp.output_text, items: resp.output.map((o) => o.type) };

  // Legacy Completions stream.
  const comp = await client.completions.create({ model: 'anthropic/claude', prompt: 'Say hi', stream: true });
  let ctext = '';
  let cusage = null;
  for await (const c of comp) {
    for (const ch of c.choices) ctext += ch.text;
    if (c.usage) cusage = c.usage.total_tokens;
  }
  out.completions = { text: ctext, total_tokens: cusage };
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
