"""The lean Python loop mgrpo's one-shot benchmark measures itself against.

What a team would write instead of mgrpo for one step of rollouts, with the
standard library only: a thread pool runs each rollout (the planner
delegates to executors through tool calls; an executor searches and visits
pages), every model call is a vLLM chat completion asking for token ids and
logprobs over a kept-alive http.client connection, and the trajectories'
token ids, loss masks and logprobs are written as JSON Lines at the end.
It keeps none of mgrpo's machinery (retries, budgets, format checks,
advantages, alignment, a store). Not shipped: the benchmark runs it.

    python3 loop.py --chat URL --web URL --tasks FILE --group-size K \
        --concurrency N --out FILE
"""

import argparse
import concurrent.futures
import http.client
import json
import re
import threading
import urllib.parse

PLANNER_SYSTEM = (
    "You lead a small research team. Break the question into subtasks and hand each one to an "
    "executor with the delegate tool. When you are sure, reply with the final answer alone inside "
    "<answer></answer> tags."
)
EXECUTOR_SYSTEM = (
    "You are a research executor. Carry out the task you are given with the search tool and the "
    "visit tool. When you are done, reply without calling a tool: write a short report."
)


def tool(name, description, properties, required):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


PLANNER_TOOLS = [
    tool("delegate", "Hand a self-contained research subtask to an executor.",
         {"task": {"type": "string", "description": "The subtask."}}, ["task"]),
]
EXECUTOR_TOOLS = [
    tool("search", "Search the web. Takes an array of queries.",
         {"query": {"type": "array", "items": {"type": "string"}, "maxItems": 5}}, ["query"]),
    tool("visit", "Read web pages. Takes URLs and a goal.",
         {"url": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
          "goal": {"type": "string"}}, ["url", "goal"]),
]

TAG = re.compile(r"<[^>]+>")
ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


class Client:
    """Kept-alive connections per thread to the chat server and the web."""

    def __init__(self, chat, web):
        self.chat = urllib.parse.urlsplit(chat)
        self.web = urllib.parse.urlsplit(web)
        self.local = threading.local()
        self.pages = {}
        self.lock = threading.Lock()
        self.calls = 0

    def conn(self, u):
        key = u.netloc
        conns = getattr(self.local, "conns", None)
        if conns is None:
            conns = self.local.conns = {}
        c = conns.get(key)
        if c is None:
            c = conns[key] = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        return c

    def request(self, u, method, path, body=None, headers=None):
        c = self.conn(u)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("%s %s: %d" % (method, path, r.status))
        return data

    def complete(self, model, messages, tools):
        body = json.dumps({
            "model": model, "messages": messages, "tools": tools,
            "temperature": 1.0, "top_p": 1.0, "max_completion_tokens": 2048,
            "logprobs": True, "top_logprobs": 0, "return_token_ids": True,
        })
        data = self.request(self.chat, "POST", self.chat.path.rstrip("/") + "/chat/completions",
                            body, {"Content-Type": "application/json"})
        with self.lock:
            self.calls += 1
        resp = json.loads(data)
        choice = resp["choices"][0]
        return {
            "prompt_ids": resp["prompt_token_ids"],
            "ids": choice["token_ids"],
            "logprobs": [e["logprob"] for e in choice["logprobs"]["content"]],
            "message": choice["message"],
        }

    def search(self, query):
        body = json.dumps({"q": query, "gl": "us", "hl": "en", "num": 10})
        data = json.loads(self.request(self.web, "POST", "/search", body,
                                       {"Content-Type": "application/json", "X-API-KEY": "bench"}))
        lines = []
        for i, o in enumerate(data.get("organic", []), 1):
            lines.append("%d. %s\n%s\n%s" % (i, o.get("title", ""), o.get("link", ""), o.get("snippet", "")))
        return "\n\n".join(lines)

    def visit(self, url):
        with self.lock:
            text = self.pages.get(url)
        if text is None:
            u = urllib.parse.urlsplit(url)
            html = self.request(u, "GET", u.path).decode("utf-8")
            text = " ".join(TAG.sub(" ", html).split())
            with self.lock:
                self.pages[url] = text
        return text


def assistant_message(msg):
    out = {"role": "assistant", "content": msg.get("content")}
    if msg.get("reasoning_content"):
        out["reasoning_content"] = msg["reasoning_content"]
    if msg.get("tool_calls"):
        out["tool_calls"] = msg["tool_calls"]
    return out


def trajectory(client, model, system, user, tools, run_tool, max_turns=12):
    """Runs one agent's turns; returns its final text and its token record."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    ids, mask, logprobs = [], [], []
    final = ""
    for _ in range(max_turns):
        turn = client.complete(model, messages, tools)
        prompt = turn["prompt_ids"]
        # The new prompt extends the sequence so far; keep what it adds.
        new = prompt[len(ids):] if prompt[:len(ids)] == ids else prompt
        if new is prompt:
            ids, mask, logprobs = [], [], []
        ids += new + turn["ids"]
        mask += [0] * len(new) + [1] * len(turn["ids"])
        logprobs += [0.0] * len(new) + turn["logprobs"]
        msg = turn["message"]
        messages.append(assistant_message(msg))
        calls = msg.get("tool_calls") or []
        if not calls:
            final = msg.get("content") or ""
            break
        for call in calls:
            fn = call["function"]
            result = run_tool(fn["name"], json.loads(fn["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return final, {"input_ids": ids, "loss_mask": mask, "logprobs": logprobs}


def rollout(client, args, task, k):
    subs = []

    def executor_tool(name, a):
        if name == "search":
            return "\n\n".join(client.search(q) for q in a["query"])
        if name == "visit":
            return "\n\n".join(client.visit(u) for u in a["url"])
        return "unknown tool"

    def planner_tool(name, a):
        report, rec = trajectory(client, args.executor_model, EXECUTOR_SYSTEM, a["task"],
                                 EXECUTOR_TOOLS, executor_tool)
        subs.append(rec)
        return report

    final, rec = trajectory(client, args.planner_model, PLANNER_SYSTEM, task["question"],
                            PLANNER_TOOLS, planner_tool)
    m = ANSWER.search(final)
    reward = 1.0 if m and m.group(1).strip() == task["answer"] else 0.0
    return {"query_id": task["id"], "rollout": k, "reward": reward, "planner": rec, "executors": subs}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--chat", required=True)
    p.add_argument("--web", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--planner-model", default="planner")
    p.add_argument("--executor-model", default="executor")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    with open(args.tasks) as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    client = Client(args.chat, args.web)
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        futures = [pool.submit(rollout, client, args, t, k) for t in tasks for k in range(args.group_size)]
        results = [f.result() for f in futures]
    with open(args.out, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    correct = sum(r["reward"] for r in results)
    print("calls %d rollouts %d correct %d" % (client.calls, len(results), correct))


if __name__ == "__main__":
    main()
