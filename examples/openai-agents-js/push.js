// A push agent service for mgrpo's gateway, written with the OpenAI Agents
// SDK: a planner agent whose `delegate` tool is an executor agent (agents as
// tools), each on its own role's base URL; the executor has `search` and
// `visit` function tools on the sim web.
//
//   PORT=8800 node push.js
//   mgrpo train --sim --out runs/js --agent-url http://127.0.0.1:8800
//
// For every rollout mgrpo POSTs {rollout_id, task, seed, deadline,
// base_urls} here and reads {answer}. The agents are built per rollout, since
// each rollout has its own base URLs. STREAM=1 streams the planner's runs
// (stream: true on the Chat Completions route).
import http from 'node:http';
import OpenAI from 'openai';
import { z } from 'zod';
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool, MaxTurnsExceededError } from '@openai/agents';
import { search, visit, searchSchema, visitSchema } from './web.js';

// Nothing leaves for OpenAI's tracing service: the gateway is the only
// endpoint.
setTracingDisabled(true);

// The gateway's bearer token, when the run sets one; the gateway never
// needs (or forwards) the engines' keys.
const apiKey = process.env.MGRPO_GATEWAY_TOKEN || 'not-needed';
const stream = process.env.STREAM === '1';

function model(baseURL, name) {
  return new OpenAIChatCompletionsModel(new OpenAI({ baseURL, apiKey, maxRetries: 0 }), name);
}

function agentsFor(baseURLs) {
  const executor = new Agent({
    name: 'executor',
    instructions: 'You are a web researcher. Use search and visit to find what the task asks, then write a short report of what you found.',
    model: model(baseURLs.executor, 'executor'),
    tools: [
      tool({ name: 'search', description: 'Search the web.', parameters: searchSchema, strict: false, execute: search }),
      tool({ name: 'visit', description: 'Read web pages.', parameters: visitSchema, strict: false, execute: visit }),
    ],
  });
  const planner = new Agent({
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
  return planner;
}

async function rollout(task) {
  const planner = agentsFor(task.base_urls);
  try {
    if (stream) {
      const result = await run(planner, task.task.question, { maxTurns: 12, stream: true });
      await result.completed;
      return { answer: String(result.finalOutput ?? '') };
    }
    const result = await run(planner, task.task.question, { maxTurns: 12 });
    return { answer: String(result.finalOutput ?? '') };
  } catch (err) {
    if (err instanceof MaxTurnsExceededError) {
      // The model ran out of turns: its own doing, an invalid format.
      return { answer: '', format_ok: false };
    }
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
// Rollouts take as long as their agents do: no server timeouts here, the
// farm's deadline bounds them.
server.requestTimeout = 0;
server.listen(Number(process.env.PORT || 8800), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
