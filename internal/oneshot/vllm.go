package oneshot

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// chatRequest is the part of a chat completion body the fake server reads.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Logprobs            bool            `json:"logprobs"`
	ReturnTokenIDs      bool            `json:"return_token_ids"`
}

// message is one chat message; content is a string or null.
type message struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []toolCall      `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
}

// text is the message's content as a string ("" when null or not a string).
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) != nil {
		return ""
	}
	return s
}

type toolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Hooks are called by the servers as requests arrive and answers leave,
// from the handlers' goroutines; a nil hook is skipped.
type Hooks struct {
	// Request is called when any request arrives, before it is read.
	Request func()
	// Answer is called after any answer has been written.
	Answer func()
}

// Chat is a vLLM-shaped OpenAI chat server (vLLM ≥ 0.10.2 answering a
// request with return_token_ids and logprobs): GET /health, GET /v1/models,
// POST /v1/chat/completions. Its answers are rendered as vLLM's JSONResponse
// renders ChatCompletionResponse.model_dump(): compact, every field in
// declaration order, nulls kept.
type Chat struct {
	// Models are the served model ids.
	Models []string
	// WebURL is the base URL the executors' search results point into.
	WebURL string
	// Latency is how long each completion takes (a small stand-in for the
	// GPU).
	Latency time.Duration
	Hooks   Hooks

	calls atomic.Int64
}

// Calls returns the number of chat completions answered so far.
func (c *Chat) Calls() int64 { return c.calls.Load() }

// ServeHTTP implements http.Handler.
func (c *Chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.Hooks.Request != nil {
		c.Hooks.Request()
	}
	if c.Hooks.Answer != nil {
		defer c.Hooks.Answer()
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case path == "/health":
		w.WriteHeader(http.StatusOK)
	case path == "/models":
		var b []byte
		b = append(b, `{"object":"list","data":[`...)
		for i, m := range c.Models {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendQuoted(b, m)
			b = append(b, `,"object":"model","created":1764576000,"owned_by":"vllm","root":`...)
			b = appendQuoted(b, m)
			b = append(b, `,"parent":null,"max_model_len":32768,"permission":[]}`...)
		}
		b = append(b, "]}"...)
		writeJSON(w, b)
	case path == "/chat/completions" && r.Method == http.MethodPost:
		c.complete(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (c *Chat) complete(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req chatRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad request body","type":"BadRequestError","code":400}}`, http.StatusBadRequest)
		return
	}
	prompt := promptIDs(&req)
	var t turn
	finish := "stop"
	if req.MaxTokens == 1 || req.MaxCompletionTokens == 1 {
		t.content, finish = "OK", "length" // a preflight probe of one token
	} else {
		t = script(&req, c.WebURL)
		if len(t.calls) > 0 {
			finish = "tool_calls"
		}
	}
	text := renderAssistant(t.reasoning, t.content, t.calls)
	ps := pieces(text)
	if finish == "length" {
		ps = ps[:1]
	}
	if c.Latency > 0 {
		time.Sleep(c.Latency)
	}
	n := c.calls.Add(1)
	writeJSON(w, appendCompletion(nil, n, req.Model, &t, ps, finish, prompt))
}

// logprobs are float32 values printed as float64, as vLLM's are.
var logprobs = []string{"-0.0011", "-5.960462772236497e-07", "-0.6931471824645996", "-0.00015960850578267127",
	"-0.12692804634571075", "-1.1920928955078125e-07", "-0.0", "-2.4523844718933105", "-0.018213987350463867"}

// appendCompletion renders one ChatCompletionResponse. ps are the sampled
// pieces (the end-of-turn token follows them unless the answer was cut at
// the length limit).
func appendCompletion(b []byte, n int64, model string, t *turn, ps []string, finish string, prompt []int) []byte {
	b = append(b, `{"id":"chatcmpl-`...)
	b = strconv.AppendInt(b, 1e15+n, 16)
	b = append(b, `","object":"chat.completion","created":1764576000,"model":`...)
	b = appendQuoted(b, model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if t.content == "" && len(t.calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = appendQuoted(b, t.content)
	}
	b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[`...)
	for i, c := range t.calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendQuoted(b, c.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = appendQuoted(b, c.Function.Name)
		b = append(b, `,"arguments":`...)
		b = appendQuoted(b, c.Function.Arguments)
		b = append(b, "}}"...)
	}
	b = append(b, `],"reasoning":`...)
	b = appendNullable(b, t.reasoning)
	b = append(b, `,"reasoning_content":`...)
	b = appendNullable(b, t.reasoning)
	b = append(b, `},"logprobs":{"content":[`...)
	ids := make([]int, 0, len(ps)+1)
	entry := func(i int, tok string) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":`...)
		b = appendQuoted(b, tok)
		b = append(b, `,"logprob":`...)
		b = append(b, logprobs[i%len(logprobs)]...)
		b = append(b, `,"bytes":[`...)
		for j := 0; j < len(tok); j++ {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(tok[j]), 10)
		}
		b = append(b, `],"top_logprobs":[]}`...)
	}
	for i, p := range ps {
		entry(i, p)
		ids = append(ids, tokenID(p))
	}
	if finish != "length" {
		entry(len(ps), "<|im_end|>")
		ids = append(ids, tokIMEnd)
	}
	b = append(b, `]},"finish_reason":`...)
	b = appendQuoted(b, finish)
	b = append(b, `,"stop_reason":null,"token_ids":`...)
	b = appendInts(b, ids)
	b = append(b, `}],"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(len(prompt)), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(len(prompt)+len(ids)), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(len(ids)), 10)
	b = append(b, `,"prompt_tokens_details":null},"prompt_logprobs":null,"prompt_token_ids":`...)
	b = appendInts(b, prompt)
	return append(b, `,"kv_transfer_params":null}`...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendQuoted(b, s)
}

func appendInts(b []byte, ids []int) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

// appendQuoted quotes s as Python's json.dumps with ensure_ascii=False
// does: the two-character escapes for quote, backslash and \b \f \n \r \t,
// \u00XX for the other control characters, everything else as it is.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}
