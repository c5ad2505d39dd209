// A pull agent for mgrpo's gateway: a plain loop on the official `openai`
// Node SDK, for agents that cannot be reached (behind a NAT, on a laptop).
// It long-polls the gateway for tasks and posts each answer back.
//
//   mgrpo train --sim --out runs/pull --gateway-addr 127.0.0.1:8700
//   GATEWAY_URL=http://127.0.0.1:8700 node pull.js
//
// The planner is one conversation with a `delegate` tool; each delegation
// runs an executor conversation (search, visit on the sim web), in parallel
// when a turn delegates several. Each executor names the delegate call that
// started it (the X-Mgrpo-Delegation header), so the run's rollout tree
// links the two.
import OpenAI from 'openai';
import { search, visit, searchSchema, visitSchema } from './web.js';

const GATEWAY = (process.env.GATEWAY_URL || 'http://127.0.0.1:8700').replace(/\/$/, '');
const CONCURRENCY = Number(process.env.CONCURRENCY || 8);
const apiKey = process.env.MGRPO_GATEWAY_TOKEN || 'not-needed';
const auth = { Authorization: `Bearer ${apiKey}` };

const fn = (name, description, parameters) => ({ type: 'function', function: { name, description, parameters } });
const delegateTool = fn('delegate', 'Hand a subtask to a web researcher and get its report.', {
  type: 'object',
  properties: { task: { type: 'string', description: 'the subtask, e.g. "Find the author of X."' } },
  required: ['task'],
});
const webTools = [fn('search', 'Search the web.', searchSchema), fn('visit', 'Read web pages.', visitSchema)];

// converse runs one conversation until the model answers without tool
// calls (or maxTurns is reached) and returns the last message's text.
// headers go with every call; runTool gets each call's name, arguments and
// id.
async function converse(client, system, user, tools, runTool, headers = {}, maxTurns = 12) {
  const messages = [{ role: 'system', content: system }, { role: 'user', content: user }];
  for (let turn = 0; turn < maxTurns; turn++) {
    const res = await client.chat.completions.create({ model: 'any', messages, tools }, { headers });
    const msg = res.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls?.length) return msg.content ?? '';
    const outputs = await Promise.all(msg.tool_calls.map(async (call) => {
      let args;
      try {
        args = JSON.parse(call.function.arguments);
      } catch (err) {
        return `Invalid arguments: ${err.message}`;
      }
      return runTool(call.function.name, args, call.id);
    }));
    msg.tool_calls.forEach((call, i) => messages.push({ role: 'tool', tool_call_id: call.id, content: outputs[i] }));
  }
  return null;
}

async function rollout(task) {
  const planner = new OpenAI({ baseURL: task.base_urls.planner, apiKey, maxRetries: 0 });
  const executor = new OpenAI({ baseURL: task.base_urls.executor, apiKey, maxRetries: 0 });
  const research = (name, args) => (name === 'search' ? search(args) : name === 'visit' ? visit(args) : `unknown tool ${name}`);
  const answer = await converse(planner,
    'You answer questions by delegating one-step subtasks to researchers. When you know the answer, write it as <answer>the answer</answer>.',
    task.task.question, [delegateTool], async (name, args, callID) => {
      if (name !== 'delegate') return `unknown tool ${name}`;
      const report = await converse(executor,
        'You are a web researcher. Use search and visit to find what the task asks, then write a short report of what you found.',
        String(args.task ?? ''), webTools, research, { 'X-Mgrpo-Delegation': callID });
      return report ?? 'The researcher ran out of turns.';
    });
  // Out of turns: the model's own doing, an invalid format.
  return answer === null ? { answer: '', format_ok: false } : { answer };
}

async function worker() {
  for (;;) {
    let resp;
    try {
      resp = await fetch(`${GATEWAY}/v1/tasks/next?wait=30`, { headers: auth });
    } catch {
      await new Promise((r) => setTimeout(r, 1000)); // the run is not up (yet, or any more)
      continue;
    }
    if (resp.status === 204) continue;
    if (resp.status !== 200) {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    const task = await resp.json();
    let result;
    try {
      result = await rollout(task);
    } catch (err) {
      result = { error: String(err?.message ?? err) };
    }
    await fetch(task.result_url, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(result),
    }).catch(() => {});
  }
}

console.log(`listening on ${GATEWAY} (pulling, ${CONCURRENCY} at a time)`);
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
