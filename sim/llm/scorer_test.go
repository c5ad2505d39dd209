package llm

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
	"github.com/mgrpo/mgrpo/sim/web"
)

// The agreement tests play real multi-turn conversations against a sim
// server, build the training sequences a trainer would (prompt and
// completion ids, one datum per stretch whose prompts extend each other),
// and check that a Scorer built from the same Config recomputes every
// logprob the server reported.

const (
	plannerSystem  = "You are a planner. Delegate subtasks and reply with <answer>…</answer>."
	executorSystem = "You are an executor. Use search and visit, then report what you found."
	webBase        = "http://web.sim"
)

// datum is one training sequence with the sampler's logprobs.
type datum struct {
	seq  []int
	mask []bool
	lps  []float64 // the server's logprob per position, 0 where unmasked
}

// sampledTurn is one generation: its prompt and completion ids, the
// logprobs reported, and the assistant message to append.
type sampledTurn struct {
	prompt, completion []int
	lps                []float64
	msg                map[string]any
	calls              []policy.ToolCall // with IDs
	final              bool
}

// trainer accumulates a conversation's turns into data, splitting where a
// prompt does not extend the sequence so far (template drift).
type trainer struct {
	data []datum
	cur  *datum
}

func (tr *trainer) add(t sampledTurn) {
	if tr.cur != nil && len(t.prompt) >= len(tr.cur.seq) && slices.Equal(t.prompt[:len(tr.cur.seq)], tr.cur.seq) {
		rest := t.prompt[len(tr.cur.seq):]
		tr.cur.seq = append(tr.cur.seq, rest...)
		tr.cur.mask = append(tr.cur.mask, make([]bool, len(rest))...)
		tr.cur.lps = append(tr.cur.lps, make([]float64, len(rest))...)
	} else {
		tr.data = append(tr.data, datum{seq: slices.Clone(t.prompt), mask: make([]bool, len(t.prompt)), lps: make([]float64, len(t.prompt))})
		tr.cur = &tr.data[len(tr.data)-1]
	}
	tr.cur.seq = append(tr.cur.seq, t.completion...)
	for range t.completion {
		tr.cur.mask = append(tr.cur.mask, true)
	}
	tr.cur.lps = append(tr.cur.lps, t.lps...)
}

// client plays conversations against one server in one dialect.
type client struct {
	t       testing.TB
	base    string
	dialect string
	route   string // "chat" or "generate"
	noThink bool   // send chat_template_kwargs enable_thinking=false
	// temperature and topP are sent with every turn (0: 1).
	temperature, topP float64
	tok               *Tokenizer
	world             *web.World
	seed              int
	calls             int
	data              []datum
	drifted           int
}

// chatTurn asks /v1/chat/completions for one turn.
func (c *client) chatTurn(msgs []map[string]any, tools []map[string]any) sampledTurn {
	c.t.Helper()
	c.seed++
	body := map[string]any{"model": DefaultModel, "messages": msgs, "tools": tools, "temperature": c.temp(), "seed": c.seed,
		"logprobs": true, "return_token_ids": true}
	if c.topP != 0 {
		body["top_p"] = c.topP
	}
	if c.noThink {
		body["chat_template_kwargs"] = map[string]any{"enable_thinking": false}
	}
	if c.dialect == DialectSGLang {
		// SGLang's chat route has the training extensions instead.
		body["return_prompt_token_ids"] = true
		body["return_meta_info"] = true
	}
	st, _, b := post(c.t, c.base+"/v1/chat/completions", body)
	if st != 200 {
		c.t.Fatalf("chat: %d %s", st, b)
	}
	var resp struct {
		PromptTokenIDs []int `json:"prompt_token_ids"`
		Choices        []struct {
			Message struct {
				Content          *string `json:"content"`
				ReasoningContent *string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			TokenIDs       []int `json:"token_ids"`
			PromptTokenIDs []int `json:"prompt_token_ids"`
			Logprobs       struct {
				Content []struct {
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
			FinishReason string `json:"finish_reason"`
			MetaInfo     struct {
				OutputTokenLogprobs [][]any `json:"output_token_logprobs"`
			} `json:"meta_info"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		c.t.Fatalf("chat response %s: %v", b, err)
	}
	ch := resp.Choices[0]
	t := sampledTurn{prompt: resp.PromptTokenIDs, completion: ch.TokenIDs}
	if t.prompt == nil {
		t.prompt = ch.PromptTokenIDs
	}
	if t.completion == nil {
		for _, l := range ch.MetaInfo.OutputTokenLogprobs {
			t.completion = append(t.completion, int(l[1].(float64)))
		}
	}
	if len(t.prompt) == 0 || len(t.completion) == 0 || len(ch.Logprobs.Content) != len(t.completion) {
		c.t.Fatalf("chat response without ids or logprobs: %s", b)
	}
	for _, l := range ch.Logprobs.Content {
		t.lps = append(t.lps, l.Logprob)
	}
	msg := map[string]any{"role": "assistant"}
	if ch.Message.Content != nil {
		msg["content"] = *ch.Message.Content
	}
	if ch.Message.ReasoningContent != nil {
		msg["reasoning_content"] = *ch.Message.ReasoningContent
	}
	var tcs []map[string]any
	for _, tc := range ch.Message.ToolCalls {
		t.calls = append(t.calls, policy.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		tcs = append(tcs, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}})
	}
	if tcs != nil {
		msg["tool_calls"] = tcs
	}
	t.msg = msg
	t.final = ch.FinishReason != "tool_calls"
	return t
}

// generateTurn asks SGLang's /generate for one turn from prompt ids.
func (c *client) generateTurn(prompt []int) sampledTurn {
	c.t.Helper()
	c.seed++
	body := map[string]any{"input_ids": prompt, "return_logprob": true,
		"sampling_params": map[string]any{"temperature": c.temp(), "sampling_seed": c.seed, "max_new_tokens": 4096}}
	if c.topP != 0 {
		body["sampling_params"].(map[string]any)["top_p"] = c.topP
	}
	st, _, b := post(c.t, c.base+"/generate", body)
	if st != 200 {
		c.t.Fatalf("generate: %d %s", st, b)
	}
	var resp struct {
		Text      string `json:"text"`
		OutputIDs []int  `json:"output_ids"`
		MetaInfo  struct {
			OutputTokenLogprobs [][]any `json:"output_token_logprobs"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		c.t.Fatalf("generate response %s: %v", b, err)
	}
	t := sampledTurn{prompt: slices.Clone(prompt), completion: resp.OutputIDs}
	for _, l := range resp.MetaInfo.OutputTokenLogprobs {
		t.lps = append(t.lps, l[0].(float64))
	}
	if len(t.lps) != len(t.completion) {
		c.t.Fatalf("generate: %d logprobs for %d ids", len(t.lps), len(t.completion))
	}
	_, _, calls := ParseAssistant(resp.Text, true, true)
	for i, call := range calls {
		call.ID = fmt.Sprintf("call_%d", i)
		t.calls = append(t.calls, call)
	}
	t.final = len(calls) == 0
	return t
}

// observe answers an executor's call from the world.
func (c *client) observe(tc policy.ToolCall) string {
	var args struct {
		Query []string `json:"query"`
		URL   []string `json:"url"`
	}
	_ = json.Unmarshal([]byte(tc.Arguments), &args)
	var b strings.Builder
	switch tc.Name {
	case policy.ToolSearch:
		for _, q := range args.Query {
			fmt.Fprintf(&b, "## Results for %q\n", q)
			for _, r := range c.world.Search(webBase, q, 5) {
				fmt.Fprintf(&b, "%d. [%s](%s)\n%s\n", r.Position, r.Title, r.Link, r.Snippet)
			}
		}
	case policy.ToolVisit:
		for _, raw := range args.URL {
			u, err := url.Parse(raw)
			text, ok := "", false
			if err == nil {
				text, ok = c.world.PageText(u.Path)
			}
			if !ok {
				fmt.Fprintf(&b, "%s: page not found\n", raw)
				continue
			}
			fmt.Fprintf(&b, "Content of %s:\n%s\n", raw, text)
		}
	default:
		b.WriteString("unknown tool")
	}
	return b.String()
}

// play runs one agent to its final turn and returns the final text;
// observe answers its calls.
func (c *client) play(system, task string, tools []map[string]any, observe func(policy.ToolCall) string) string {
	c.t.Helper()
	var tr trainer
	defer func() { c.data = append(c.data, tr.data...); c.drifted += len(tr.data) - 1 }()
	if c.route == "generate" {
		var names []policy.Tool
		for _, tl := range tools {
			fn := tl["function"].(map[string]any)
			js, _ := json.Marshal(fn["parameters"])
			names = append(names, policy.Tool{Name: fn["name"].(string), Description: fn["description"].(string), Parameters: js})
		}
		text, err := Template{}.Render([]Message{{Role: "system", Content: system}, {Role: "user", Content: task}}, names, true)
		if err != nil {
			c.t.Fatal(err)
		}
		prompt := c.tok.Encode(text)
		for range 30 {
			t := c.generateTurn(prompt)
			tr.add(t)
			if t.final {
				return c.tok.MustDecode(t.completion)
			}
			next := slices.Concat(t.prompt, t.completion)
			var tail strings.Builder
			tail.WriteString("\n")
			for _, call := range t.calls {
				tail.WriteString(IMStart + "tool\n" + observe(call) + IMEnd + "\n")
			}
			tail.WriteString(IMStart + "assistant\n")
			prompt = append(next, c.tok.Encode(tail.String())...)
		}
		return ""
	}
	msgs := []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": task}}
	for range 30 {
		t := c.chatTurn(msgs, tools)
		tr.add(t)
		msgs = append(msgs, t.msg)
		if t.final {
			s, _ := t.msg["content"].(string)
			return s
		}
		for _, call := range t.calls {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": call.ID, "content": observe(call)})
		}
	}
	return ""
}

// playQuestion plays a planner whose delegations are played by executors.
func (c *client) playQuestion(q web.Question) {
	c.play(plannerSystem, q.Question, plannerTools, func(call policy.ToolCall) string {
		var args struct {
			Task string `json:"task"`
		}
		_ = json.Unmarshal([]byte(call.Arguments), &args)
		return c.play(executorSystem, args.Task, researchTools, c.observe)
	})
}

// MustDecode decodes ids or panics; tests only.
func (t *Tokenizer) MustDecode(ids []int) string {
	s, err := t.DecodeSkipSpecial(ids)
	if err != nil {
		panic(err)
	}
	return s
}

// temp is the temperature the client sends.
func (c *client) temp() float64 {
	if c.temperature == 0 {
		return 1
	}
	return c.temperature
}

// playData plays questions (twice each) through route against a server
// for cfg and returns the data and how many extra data drift split off.
func playData(t testing.TB, cfg Config, questions int, route string) (*Server, []datum, int) {
	return playDataThinking(t, cfg, questions, route, false)
}

// playDataThinking is playData, with enable_thinking=false when noThink.
func playDataThinking(t testing.TB, cfg Config, questions int, route string, noThink bool) (*Server, []datum, int) {
	t.Helper()
	return playDataSampled(t, cfg, questions, route, noThink, 1, 0)
}

// playDataSampled is playDataThinking sending temperature and, when not 0,
// top_p with every turn.
func playDataSampled(t testing.TB, cfg Config, questions int, route string, noThink bool, temperature, topP float64) (*Server, []datum, int) {
	t.Helper()
	s, ts := MustServer(t, cfg)
	w, err := web.Generate(web.Config{Seed: 7, Questions: questions})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, base: ts.URL, dialect: cfg.Dialect, route: route, noThink: noThink, tok: s.Tokenizer(), world: w,
		temperature: temperature, topP: topP}
	for _, q := range w.Questions {
		for range 2 {
			c.playQuestion(q)
		}
	}
	return s, c.data, c.drifted
}

func TestScorerAgreesWithServer(t *testing.T) {
	strip := testConfig(DialectVLLM)
	strip.StripReasoning = true
	random := testConfig(DialectSGLang)
	random.Params = randomParams(t, 2)
	cases := []struct {
		name    string
		cfg     Config
		route   string
		noThink bool
		drift   bool
	}{
		{"vllm chat", testConfig(DialectVLLM), "chat", false, false},
		{"vllm chat strip reasoning", strip, "chat", false, true},
		{"vllm chat without thinking", testConfig(DialectVLLM), "chat", true, false},
		{"sglang generate", testConfig(DialectSGLang), "generate", false, false},
		{"sglang generate random params", random, "generate", false, false},
		{"sglang chat", testConfig(DialectSGLang), "chat", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, data, drifted := playDataThinking(t, tc.cfg, 4, tc.route, tc.noThink)
			if tc.drift && drifted == 0 {
				t.Fatalf("strip-reasoning server: no trajectory was split by drift")
			}
			checkAgreement(t, NewScorer(tc.cfg), s.Params(), data)
			t.Logf("%d data, %d of them split off by drift", len(data), drifted)
		})
	}
}

// checkAgreement scores every datum and compares with the server's
// logprobs on every masked token.
func checkAgreement(t *testing.T, sc *Scorer, params *policy.Params, data []datum) {
	t.Helper()
	turns, grads, maxDiff := 0, 0, 0.0
	for i, d := range data {
		got, err := sc.Score(params, d.seq, d.mask)
		if err != nil {
			t.Fatalf("datum %d: %v", i, err)
		}
		if len(got.Unmatched) > 0 {
			t.Fatalf("datum %d: unmatched turns %+v", i, got.Unmatched)
		}
		turns += len(got.Turns)
		grads += len(got.Grads)
		for pos, m := range d.mask {
			if !m {
				continue
			}
			diff := math.Abs(got.Logprobs[pos] - d.lps[pos])
			maxDiff = max(maxDiff, diff)
			if diff > 1e-5 {
				t.Fatalf("datum %d position %d: scorer %v, server %v", i, pos, got.Logprobs[pos], d.lps[pos])
			}
		}
	}
	t.Logf("%d turns agree (%d with a gradient), max |Δ| %.2g", turns, grads, maxDiff)
	if grads == 0 {
		t.Errorf("no turn has a gradient")
	}
	if turns < 20 {
		t.Errorf("only %d turns played", turns)
	}
}

func TestScorerCatchesCorruption(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	s, data, _ := playData(t, cfg, 2, "chat")
	sc := NewScorer(cfg)
	for i, d := range data[:min(len(data), 6)] {
		first := slices.Index(d.mask, true)
		// Corrupt one completion token of the first turn: the next id
		// that is not special.
		bad := slices.Clone(d.seq)
		pos := first + (len(d.seq)-first)/4
		for !d.mask[pos] {
			pos--
		}
		bad[pos] = (bad[pos] + 1) % sc.Tokenizer().VocabSize()
		for sc.Tokenizer().IsSpecial(bad[pos]) {
			bad[pos] = (bad[pos] + 1) % sc.Tokenizer().VocabSize()
		}
		got, err := sc.Score(s.Params(), bad, d.mask)
		if err != nil {
			t.Fatal(err)
		}
		if !covers(got.Unmatched, pos) {
			t.Errorf("datum %d: token %d corrupted, unmatched %+v", i, pos, got.Unmatched)
		}
		// Shift the mask right by one: every turn loses its first token
		// and takes the next prompt's first.
		shifted := append([]bool{false}, d.mask[:len(d.mask)-1]...)
		got, err = sc.Score(s.Params(), d.seq, shifted)
		if err != nil {
			t.Fatal(err)
		}
		if !covers(got.Unmatched, first+1) {
			t.Errorf("datum %d: mask shifted right, unmatched %+v", i, got.Unmatched)
		}
		left := append(slices.Clone(d.mask[1:]), false)
		got, err = sc.Score(s.Params(), d.seq, left)
		if err != nil {
			t.Fatal(err)
		}
		if !covers(got.Unmatched, first-1) {
			t.Errorf("datum %d: mask shifted left, unmatched %+v", i, got.Unmatched)
		}
	}
	if _, err := sc.Score(nil, []int{1, 2}, []bool{true}); err == nil {
		t.Errorf("mask of the wrong length: no error")
	}
}

// randomParams perturbs the default params by normal noise of scale sd.
func randomParams(tb testing.TB, sd float64) *policy.Params {
	tb.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	v := policy.DefaultParams(policy.DefaultSkills()).Vector()
	for i := range v {
		v[i] += sd * rng.NormFloat64()
	}
	p, err := policy.ParamsFromVector(v)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func covers(us []UnmatchedTurn, pos int) bool {
	for _, u := range us {
		if u.Start <= pos && pos < u.End && u.Reason != "" {
			return true
		}
	}
	return false
}

func TestScorerTruncated(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	s, data, _ := playData(t, cfg, 1, "chat")
	sc := NewScorer(cfg)
	d := data[0]
	first := slices.Index(d.mask, true)
	end := first
	for end < len(d.mask) && d.mask[end] {
		end++
	}
	cut := first + (end-first)*3/4
	got, err := sc.Score(s.Params(), d.seq[:cut], d.mask[:cut])
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 1 || !got.Turns[0].Truncated || len(got.Unmatched) != 0 {
		t.Fatalf("cut turn: turns %+v, unmatched %+v", got.Turns, got.Unmatched)
	}
	if math.Abs(got.Logprobs[first]-d.lps[first]) > 1e-5 {
		t.Logf("cut turn scored %v, sampled %v (a prefix need not fix the path)", got.Logprobs[first], d.lps[first])
	}
}

// BenchmarkScorer measures scoring whole conversations (a planner's or an
// executor's sequence with all its turns) from their token ids.
func BenchmarkScorer(b *testing.B) {
	cfg := testConfig(DialectVLLM)
	s, data, _ := playData(b, cfg, 4, "chat")
	sc := NewScorer(cfg)
	turns := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range data {
			got, err := sc.Score(s.Params(), d.seq, d.mask)
			if err != nil {
				b.Fatal(err)
			}
			turns += len(got.Turns)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(turns), "µs/turn")
}

// FuzzScorer feeds arbitrary sequences and masks: Score must not panic and
// must never score a turn the policy did not write.
func FuzzScorer(f *testing.F) {
	sc := NewScorer(testConfig(DialectVLLM))
	tok := sc.Tokenizer()
	prompt := tok.Encode("<|im_start|>user\n" + question + "<|im_end|>\n<|im_start|>assistant\n")
	f.Add([]byte{1, 2, 3}, []byte{0xff})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, raw, maskBits []byte) {
		seq := slices.Clone(prompt)
		for i := 0; i+1 < len(raw); i += 2 {
			seq = append(seq, (int(raw[i])<<8|int(raw[i+1]))%tok.VocabSize())
		}
		mask := make([]bool, len(seq))
		for i := len(prompt); i < len(seq); i++ {
			k := i - len(prompt)
			mask[i] = k/8 < len(maskBits) && maskBits[k/8]&(1<<(k%8)) != 0
		}
		got, err := sc.Score(nil, seq, mask)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Logprobs) != len(seq) {
			t.Fatalf("%d logprobs for %d tokens", len(got.Logprobs), len(seq))
		}
	})
}
