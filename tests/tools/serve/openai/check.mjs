// tern serve through the official openai client, as an application would
// use it: chat and completions, streamed and not, n, stop, logprobs,
// usage, the API key. Exits non-zero on the first mismatch.
//   node check.mjs PORT KEY
import OpenAI from "openai";
import assert from "node:assert/strict";

const [port, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 });

async function collect(stream, chat) {
  const text = {};
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const piece = chat ? c.delta?.content ?? "" : c.text ?? "";
      text[c.index] = (text[c.index] ?? "") + piece;
    }
  }
  return { text, usage };
}

const models = await client.models.list();
assert.equal(models.data[0].object, "model");

const messages = [{ role: "user", content: "Hello there" }];
const chat = await client.chat.completions.create({ model: "any", messages, max_tokens: 10, temperature: 0 });
assert.equal(chat.object, "chat.completion");
assert.equal(chat.choices[0].message.role, "assistant");
assert.ok(["stop", "length"].includes(chat.choices[0].finish_reason));
const streamed = await collect(
  await client.chat.completions.create({ model: "any", messages, max_tokens: 10, temperature: 0, stream: true,
                                         stream_options: { include_usage: true } }),
  true);
assert.equal(streamed.text[0], chat.choices[0].message.content);
assert.equal(streamed.usage.completion_tokens, chat.usage.completion_tokens);

const two = await client.chat.completions.create({ model: "any", messages, max_tokens: 6, n: 2, seed: 7,
                                                   logprobs: true, top_logprobs: 2 });
assert.equal(two.choices.length, 2);
assert.ok(two.choices[0].logprobs.content.length > 0);
assert.ok(two.choices[0].logprobs.content[0].top_logprobs.length <= 2);

const comp = await client.completions.create({ model: "any", prompt: "Once upon", max_tokens: 12, temperature: 0 });
assert.equal(comp.object, "text_completion");
const full = comp.choices[0].text;
const s = await collect(await client.completions.create({ model: "any", prompt: "Once upon", max_tokens: 12,
                                                          temperature: 0, stream: true }), false);
assert.equal(s.text[0], full);
if (full.length > 6) {
  const stop = full.slice(3, 6);
  const cut = await client.completions.create({ model: "any", prompt: "Once upon", max_tokens: 12, temperature: 0,
                                                stop: [stop] });
  assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, "stop");
}

const bad = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "wrong", maxRetries: 0 });
await assert.rejects(bad.models.list(), (e) => e.status === 401);
await assert.rejects(client.completions.create({ model: "any", prompt: "x", max_tokens: -1 }), (e) => e.status === 400);
console.log("openai client ok");
