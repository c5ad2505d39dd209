// A push agent service like push.js, on the OpenAI Agents SDK's default
// model class, OpenAIResponsesModel: every call goes to the gateway's
// Responses route (POST …/v1/responses) as item lists. A planner agent
// whose `delegate` tool is an executor agent, each on its role's base URL.
// STREAM=1 streams the planner's runs.
//
//   PORT=8801 node responses.js
//   mgrpo train --sim --out runs/js-responses --agent-url http://127.0.0.1:8801
import http from 'node:http';
import OpenAI from 'openai';
import { z } from 'zod';
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool, MaxTurnsExceededError } from '@openai/agents';
import { search, visit, searchSchema, visitSchema } from './web.js';

setTracingDisabled(true);
const apiKey = process.env.MGRPO_GATEWAY_TOKEN || 'not-needed';
const stream = process.env.STREAM === '1';

function model(baseURL, name) {
  return new OpenAIResponsesModel(new OpenAI({ baseURL, apiKey, maxRetries: 0 }), name);
}

function plannerFor(baseURLs) {
  const executor = new Agent({
    name: 'executor',
    instructions: 'You are a web researcher. Use search and visit to find what the task asks, then write a short report of what you found.',
    model: model(baseURLs.executor, 'executor'),
    tools: [
      tool({ name: 'search', description: 'Search the web.', parameters: searchSchema, strict: false, execute: search }),
      tool({ name: 'visit', description: 'Read web pages.', parameters: visitSchema, strict: false, execute: visit }),
    ],
  });
  return new Agent({
    name: 'planner',
    instructions: 'You answer questions by delegating one-step subtasks to researchers. When you know the answer, write it as <answer>the answer</answer>.',
    model: model(baseURLs.planner, 'planner'),
    tools: [
      executor.asTool({
        toolName: 'delegate',
        toolDescription: 'Hand a subtask to a web researcher and get its report.',
        parameters: z.object({ task: z.string().describe('the subtask, e.g. "Find the author of X."') }),
        inputBuilder: ({ params }) => params.task,
        runOptions: { maxTurns: 12 },
      }),
    ],
  });
}

async function rollout(task) {
  const planner = plannerFor(task.base_urls);
  try {
    if (stream) {
      const result = await run(planner, task.task.question, { maxTurns: 12, stream: true });
      await result.completed;
      return { answer: String(result.finalOutput ?? '') };
    }
    const result = await run(planner, task.task.question, { maxTurns: 12 });
    return { answer: String(result.finalOutput ?? '') };
  } catch (err) {
    if (err instanceof MaxTurnsExceededError) return { answer: '', format_ok: false };
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
server.listen(Number(process.env.PORT || 8801), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
