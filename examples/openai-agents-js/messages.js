// A push agent service on the Anthropic TypeScript SDK: a planner and an
// executor, each a messages.create tool-use loop on its role's base URL
// (the gateway's Messages route, POST …/v1/messages; the SDK adds /v1 to
// the base URL, so the role's URL is given without it). The planner's
// `delegate` tool runs an executor loop; the executor's tools are search
// and visit on the sim web. STREAM=1 streams every call.
//
//   PORT=8802 node messages.js
//   mgrpo train --sim --out runs/js-messages --agent-url http://127.0.0.1:8802
import http from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { search, visit } from './web.js';

const apiKey = process.env.MGRPO_GATEWAY_TOKEN || 'not-needed';
const stream = process.env.STREAM === '1';

const list = (what) => ({ type: 'object', properties: { [what]: { type: 'array', items: { type: 'string' } } }, required: [what] });
const executorTools = [
  { name: 'search', description: 'Search the web.', input_schema: list('query') },
  { name: 'visit', description: 'Read web pages.', input_schema: list('url') },
];
const plannerTools = [{
  name: 'delegate',
  description: 'Hand a subtask to a web researcher and get its report.',
  input_schema: { type: 'object', properties: { task: { type: 'string' } }, required: ['task'] },
}];

// create makes one call, streamed or not, and returns the Message.
async function create(client, params) {
  if (stream) return client.messages.stream(params).finalMessage();
  return client.messages.create(params);
}

// loop runs one conversation until the model answers without tools.
async function loop(baseURL, name, system, question, tools, runTool, delegation) {
  const headers = delegation ? { 'X-Mgrpo-Delegation': delegation } : {};
  const client = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey, maxRetries: 0, defaultHeaders: headers });
  const messages = [{ role: 'user', content: question }];
  for (let turn = 0; turn < 12; turn++) {
    const msg = await create(client, { model: name, max_tokens: 1024, system, messages, tools });
    messages.push({ role: 'assistant', content: msg.content });
    const calls = msg.content.filter((b) => b.type === 'tool_use');
    if (msg.stop_reason !== 'tool_use' || calls.length === 0) {
      return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    }
    const results = await Promise.all(calls.map(async (c) => ({ type: 'tool_result', tool_use_id: c.id, content: String(await runTool(c)) })));
    messages.push({ role: 'user', content: results });
  }
  return null;
}

async function rollout(task) {
  const urls = task.base_urls;
  const researcher = (c) => loop(urls.executor, 'executor', 'You are a web researcher. Use search and visit to find what the task asks, then write a short report of what you found.',
    String(c.input?.task ?? ''), executorTools, (t) => (t.name === 'search' ? search(t.input) : visit(t.input)), c.id);
  try {
    const answer = await loop(urls.planner, 'planner', 'You answer questions by delegating one-step subtasks to researchers. When you know the answer, write it as <answer>the answer</answer>.',
      task.task.question, plannerTools, async (c) => (await researcher(c)) ?? 'the researcher ran out of turns');
    return answer === null ? { answer: '', format_ok: false } : { answer };
  } catch (err) {
    return { error: String(err?.message ?? err) };
  }
}

const server = http.createServer(async (req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  let body = '';
  for await (const chunk of req) body += chunk;
  let out;
  try {
    out = await rollout(JSON.parse(body));
  } catch (err) {
    out = { error: `bad task: ${err.message}` };
  }
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(out));
});
server.requestTimeout = 0;
server.listen(Number(process.env.PORT || 8802), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
