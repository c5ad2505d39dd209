#!/usr/bin/env python3
"""Writes the chat-completion fixtures in this folder.

Each answer is built as the server's response model dumps it (fields in
declaration order, None kept where the model keeps it) and rendered as
Starlette's JSONResponse renders it: json.dumps(ensure_ascii=False,
allow_nan=False, separators=(",", ":")). README.md says which protocol
definitions each field comes from. Run from this folder: python3 gen.py
"""

import json

QWEN_IM_START, QWEN_IM_END, NEWLINE = 151644, 151645, 198


def prompt_ids(n, seed):
    """A chat-template-shaped prompt: <|im_start|>system\\n … <|im_end|>\\n
    <|im_start|>assistant\\n, with n content ids between."""
    ids = [QWEN_IM_START, 8948, NEWLINE]
    x = seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        ids.append(x % 150000)
    ids += [QWEN_IM_END, NEWLINE, QWEN_IM_START, 77091, NEWLINE]
    return ids


# Sampled tokens: (token text, id, logprob). Logprobs as an engine writes
# them: float32 values widened to float64, tiny ones in exponent form.
ANSWER = [
    ("The", 785, -0.0003528219054), (" answer", 4226, -1.1920928955078125e-07),
    (" is", 374, -0.0), (" 42", 220, -2.4523844718933105), (".", 13, -0.018213987350463867),
]
REASONING = [
    ("Let", 10061, -0.6931471824645996), (" me", 752, -3.576278118089249e-06),
    (" think", 1744, -0.00015960850578267127), (".", 13, -0.12692804634571075),
]
UNICODE = [
    (" Zürich", 86552, -0.5), (" 東", 42192, -1.25), ("京", 36407, -9999.0),
    (" 😀", 90316, -3.2186508178710938e-05), (" ½", 23084, -0.75),
]
TOOL = [("<tool_call>", 151657, -0.0011), ("\n", NEWLINE, -5.960462772236497e-07), ("</tool_call>", 151658, -0.004)]
EOS = ("<|im_end|>", QWEN_IM_END, -0.0019178203167393804)


def vllm_entry(tok, lp, top=0):
    e = {"token": tok, "logprob": lp, "bytes": list(tok.encode("utf-8"))}
    alts = [(tok, lp), ("the", lp - 1.5), (" a", lp - 2.25)][:top]
    e["top_logprobs"] = [{"token": t, "logprob": l, "bytes": list(t.encode("utf-8"))} for t, l in alts]
    return e


def sglang_entry(tok, lp, top=0):
    alts = [(tok, lp), ("the", lp - 1.5), (" a", lp - 2.25)][:top]
    return {"token": tok, "bytes": list(tok.encode("utf-8")), "logprob": lp,
            "top_logprobs": [{"token": t, "bytes": list(t.encode("utf-8")), "logprob": l} for t, l in alts]}


def vllm_message(content, reasoning=None, tool_calls=(), newer=True):
    m = {"role": "assistant", "content": content, "refusal": None, "annotations": None, "audio": None,
         "function_call": None, "tool_calls": list(tool_calls)}
    if newer:
        # vLLM main: reasoning, with the deprecated reasoning_content copied
        # from it by a model validator.
        m["reasoning"] = reasoning
    m["reasoning_content"] = reasoning
    return m


def vllm_choice(index, tokens, message, finish="stop", stop_reason=None, top=0, eos=True):
    toks = tokens + ([EOS] if eos else [])
    return {"index": index, "message": message,
            "logprobs": {"content": [vllm_entry(t, lp, top) for t, _, lp in toks]},
            "finish_reason": finish, "stop_reason": stop_reason, "token_ids": [i for _, i, _ in toks]}


def vllm_answer(choices, prompt, details=None):
    completion = sum(len(c["token_ids"]) for c in choices)
    return {"id": "chatcmpl-5b1f0c9e2d8a4c47a1e3f06b9d2c7e18", "object": "chat.completion", "created": 1764576000,
            "model": "Qwen/Qwen3-8B", "choices": choices, "service_tier": None, "system_fingerprint": None,
            "usage": {"prompt_tokens": len(prompt), "total_tokens": len(prompt) + completion,
                      "completion_tokens": completion, "prompt_tokens_details": details},
            "prompt_logprobs": None, "prompt_token_ids": prompt, "kv_transfer_params": None}


def sglang_meta(prompt, toks, finish, top=0, cached=0):
    m = {"id": "6f0c3b2a9e7d4f18b5a2c1d0e9f8a7b6", "finish_reason": finish, "prompt_tokens": len(prompt),
         "weight_version": "default", "num_retractions": 0,
         # logprob_start_len -1: the last prompt token only; its logprob is None.
         "input_token_logprobs": [[None, prompt[-1], "\n"]],
         "output_token_logprobs": [[lp, i, t] for t, i, lp in toks],
         "output_token_logprobs_length": len(toks)}
    if top:
        m["input_top_logprobs"] = [None]
        m["output_top_logprobs"] = [[[lp, i, t], [lp - 1.5, 1782, "the"]][:top] for t, i, lp in toks]
    m.update({"reasoning_tokens": 0, "completion_tokens": len(toks), "cached_tokens": cached,
              "e2e_latency": 0.4817960262298584})
    return m


def sglang_choice(index, tokens, prompt, content, reasoning=None, tool_calls=None, finish=None, top=0,
                  hidden=None, cached=0):
    toks = tokens + [EOS]
    finish = finish or {"type": "stop", "matched": QWEN_IM_END}
    c = {"index": index,
         "message": {"role": "assistant", "content": content, "reasoning_content": reasoning, "tool_calls": tool_calls},
         "logprobs": {"content": [sglang_entry(t, lp, top) for t, _, lp in toks]},
         "finish_reason": finish["type"], "matched_stop": finish.get("matched")}
    if hidden is not None:
        c["hidden_states"] = hidden
    c["prompt_token_ids"] = prompt
    c["meta_info"] = sglang_meta(prompt, toks, finish, top, cached)
    return c


def sglang_answer(choices, prompt, details=None):
    completion = sum(c["meta_info"]["completion_tokens"] for c in choices)
    return {"id": "6f0c3b2a9e7d4f18b5a2c1d0e9f8a7b6", "object": "chat.completion", "created": 1764576000,
            "model": "Qwen/Qwen3-8B", "choices": choices,
            "usage": {"prompt_tokens": len(prompt), "total_tokens": len(prompt) + completion,
                      "completion_tokens": completion, "prompt_tokens_details": details, "reasoning_tokens": 0},
            "metadata": {"weight_version": "default"}}


def text(tokens):
    return "".join(t for t, _, _ in tokens)


def render(obj, ensure_ascii=False):
    return json.dumps(obj, ensure_ascii=ensure_ascii, allow_nan=False, indent=None, separators=(",", ":"))


def write(name, obj, ensure_ascii=False):
    with open(name, "w", encoding="utf-8") as f:
        f.write(render(obj, ensure_ascii))


P = prompt_ids(120, 7)
args = '{"query": ["capital of Switzerland", "Zürich population"]}'
vllm_calls = [{"id": "chatcmpl-tool-8d2f1a7c4b9e4e06a3c5d7f1e2b8c9a0", "type": "function",
               "function": {"name": "search", "arguments": args}},
              {"id": "chatcmpl-tool-1b7e9c3d5f2a4086b4d6e8f0a1c3e5d7", "type": "function",
               "function": {"name": "visit", "arguments": '{"url": ["https://example.org/z"], "goal": "population"}'}}]
sglang_calls = [{"id": "call_4f1e2d3c5b6a79880a1b2c3d", "index": 0, "type": "function",
                 "function": {"name": "search", "arguments": args}}]

write("vllm_basic.json", vllm_answer([vllm_choice(0, ANSWER, vllm_message(text(ANSWER)))], P))
write("vllm_0.10.2_reasoning.json", vllm_answer(
    [vllm_choice(0, REASONING + ANSWER, vllm_message(text(ANSWER), text(REASONING), newer=False))], P))
write("vllm_reasoning.json", vllm_answer([vllm_choice(0, REASONING + ANSWER, vllm_message(text(ANSWER), text(REASONING)))], P))
write("vllm_stop_reason_int.json", vllm_answer(
    [vllm_choice(0, ANSWER + [("<|endoftext|>", 151643, -0.5)], vllm_message(text(ANSWER)), stop_reason=151643, eos=False)], P))
write("vllm_stop_reason_str.json", vllm_answer(
    [vllm_choice(0, ANSWER, vllm_message(text(ANSWER)), stop_reason="</answer>", eos=False)], P))
write("vllm_length.json", vllm_answer([vllm_choice(0, ANSWER, vllm_message(text(ANSWER)), finish="length", eos=False)], P))
write("vllm_tool_calls.json", vllm_answer(
    [vllm_choice(0, TOOL, vllm_message(None, tool_calls=vllm_calls), finish="tool_calls")], P))
write("vllm_unicode.json", vllm_answer([vllm_choice(0, UNICODE, vllm_message(text(UNICODE)))], P))
write("vllm_unicode_ascii_escaped.json", vllm_answer([vllm_choice(0, UNICODE, vllm_message(text(UNICODE)))], P),
      ensure_ascii=True)
# No server escapes a member name; an encoder in between may (this one
# writes the top-level prompt_token_ids and the first logprob as escapes).
with open("vllm_escaped_keys.json", "w", encoding="utf-8") as f:
    f.write(render(vllm_answer([vllm_choice(0, ANSWER, vllm_message(text(ANSWER)))], P))
            .replace('"prompt_token_ids":', '"prompt_token_\\u0069ds":')
            .replace('"logprob":', '"log\\u0070rob":', 1))
write("vllm_top_logprobs.json", vllm_answer([vllm_choice(0, ANSWER, vllm_message(text(ANSWER)), top=2)], P))
write("vllm_n2.json", vllm_answer([vllm_choice(0, ANSWER, vllm_message(text(ANSWER))),
                                   vllm_choice(1, UNICODE, vllm_message(text(UNICODE)))], P))
write("vllm_prompt_tokens_details.json", vllm_answer([vllm_choice(0, ANSWER, vllm_message(text(ANSWER)))], P,
                                                     details={"cached_tokens": 112}))

write("sglang_basic.json", sglang_answer([sglang_choice(0, ANSWER, P, text(ANSWER))], P))
write("sglang_matched_stop_str.json", sglang_answer(
    [sglang_choice(0, ANSWER, P, text(ANSWER), finish={"type": "stop", "matched": "</answer>"})], P))
write("sglang_length.json", sglang_answer(
    [sglang_choice(0, ANSWER, P, text(ANSWER), finish={"type": "length", "length": 6})], P))
write("sglang_reasoning.json", sglang_answer([sglang_choice(0, REASONING + ANSWER, P, text(ANSWER), text(REASONING))], P))
# A parsed tool call turns the finish into tool_calls with nothing matched,
# in the choice and in meta_info (the same dict).
write("sglang_tool_calls.json", sglang_answer(
    [sglang_choice(0, TOOL, P, "", tool_calls=sglang_calls, finish={"type": "tool_calls", "matched": None})], P))
write("sglang_unicode.json", sglang_answer([sglang_choice(0, UNICODE, P, text(UNICODE))], P))
write("sglang_top_logprobs.json", sglang_answer([sglang_choice(0, ANSWER, P, text(ANSWER), top=2)], P))
write("sglang_n2.json", sglang_answer([sglang_choice(0, ANSWER, P, text(ANSWER)),
                                       sglang_choice(1, UNICODE, P, text(UNICODE))], P))
write("sglang_cache_report.json", sglang_answer([sglang_choice(0, ANSWER, P, text(ANSWER), cached=112)], P,
                                                details={"cached_tokens": 112}))
write("sglang_hidden_states.json", sglang_answer(
    [sglang_choice(0, ANSWER, P, text(ANSWER), hidden=[[0.0123, -1.5, 2.25e-05], [0.5, 0.25, -0.125]])], P))
