package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/benchproc"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
	"github.com/mgrpo/mgrpo/sim/web"
)

// manyConvWorld is the web world of BenchmarkChatManyConversations, shaped
// like the rollout farm's: its seed, its long pages, and 1,250 questions
// (10,000 rollouts in groups of 8).
var manyConvWorld = web.Config{Seed: 11, Questions: 1250, BackgroundSentences: 70}

const (
	manyConvGroup     = 8    // conversations per question, as a GRPO group
	manyConvMaxTurns  = 12   // a conversation restarts after this many turns
	manyConvVisitCap  = 4000 // visit observations are cut to this many bytes
	manyConvSystemMsg = "You are a research executor. Use search to find pages and visit to read them, then report what you found with the evidence."
)

// manyConv is one conversation of BenchmarkChatManyConversations: its
// messages, already JSON-encoded, and where it is.
type manyConv struct {
	msgs  []json.RawMessage
	q     int // question index
	turns int
	seed  int
}

// manyConvPlayer advances many executor conversations against one server,
// one turn at a time, answering tool calls from a generated world. Tool
// observations are memoised by call, so they recur across conversations
// byte for byte, as real pages and search results do.
type manyConvPlayer struct {
	tb testing.TB
	h  http.Handler
	// mirror, when set, is sent every request too, and must answer with
	// the same bytes.
	mirror http.Handler
	world  *web.World
	tools  json.RawMessage
	convs  []manyConv
	obs    map[string]json.RawMessage // tool call → encoded observation
	next   int                        // the conversation to advance next
	seeds  int
	body   bytes.Buffer

	// Totals over the calls made, for the per-call figures.
	sentMsgs, sentBytes int
}

func newManyConvPlayer(tb testing.TB, s *Server, w *web.World, n int) *manyConvPlayer {
	tb.Helper()
	tools, err := json.Marshal(researchTools)
	if err != nil {
		tb.Fatal(err)
	}
	p := &manyConvPlayer{tb: tb, h: s.Handler(), world: w, tools: tools, obs: map[string]json.RawMessage{}}
	p.convs = make([]manyConv, n)
	// Conversation i takes question i mod n/8, so the members of a group
	// are far apart in the round, as rollouts drift apart in a farm.
	for i := range p.convs {
		p.restart(&p.convs[i], i%p.groups())
	}
	return p
}

func mustJSON(tb testing.TB, v any) json.RawMessage {
	tb.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return js
}

// groups returns the number of questions in flight.
func (p *manyConvPlayer) groups() int { return max(len(p.convs)/manyConvGroup, 1) }

// restart begins a new conversation on question q in c.
func (p *manyConvPlayer) restart(c *manyConv, q int) {
	qs := p.world.Questions
	c.q = q % len(qs)
	c.turns = 0
	p.seeds++
	c.seed = p.seeds
	c.msgs = append(c.msgs[:0],
		mustJSON(p.tb, map[string]string{"role": "system", "content": manyConvSystemMsg}),
		mustJSON(p.tb, map[string]string{"role": "user", "content": qs[c.q].Question}))
}

// step sends the next conversation's whole history as one chat call and
// appends the answer and its observations. It returns the time the handler
// took.
func (p *manyConvPlayer) step() time.Duration {
	c := &p.convs[p.next]
	p.next = (p.next + 1) % len(p.convs)
	p.body.Reset()
	p.body.WriteString(`{"messages":[`)
	for i, m := range c.msgs {
		if i > 0 {
			p.body.WriteByte(',')
		}
		p.body.Write(m)
	}
	p.sentMsgs += len(c.msgs)
	fmt.Fprintf(&p.body, `],"tools":%s,"seed":%d,"max_tokens":512,"return_token_ids":true,"logprobs":true}`, p.tools, c.seed*100+c.turns)
	p.sentBytes += p.body.Len()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(p.body.Bytes()))
	start := time.Now()
	p.h.ServeHTTP(rec, req)
	took := time.Since(start)
	if rec.Code != http.StatusOK {
		p.tb.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if p.mirror != nil {
		mrec := httptest.NewRecorder()
		p.mirror.ServeHTTP(mrec, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(p.body.Bytes())))
		if !bytes.Equal(mrec.Body.Bytes(), rec.Body.Bytes()) {
			p.tb.Fatalf("mirror answered\n%s\nwant\n%s", mrec.Body, rec.Body)
		}
	}
	// Only the message is decoded: the token ids and logprobs around it
	// are most of the body, and decoding them would be most of the
	// benchmark's own work.
	var m struct {
		Content   *string        `json:"content"`
		Reasoning string         `json:"reasoning_content"`
		ToolCalls []respToolCall `json:"tool_calls"`
	}
	out := rec.Body.Bytes()
	i := bytes.Index(out, []byte(`"message":`))
	if i < 0 {
		p.tb.Fatalf("no message in %s", out)
	}
	if err := json.NewDecoder(bytes.NewReader(out[i+len(`"message":`):])).Decode(&m); err != nil {
		p.tb.Fatal(err)
	}
	c.msgs = append(c.msgs, mustJSON(p.tb, map[string]any{
		"role": "assistant", "content": m.Content, "reasoning_content": m.Reasoning, "tool_calls": m.ToolCalls,
	}))
	c.turns++
	if len(m.ToolCalls) == 0 || c.turns >= manyConvMaxTurns {
		// The next rollout of this slot takes the next question in line.
		p.restart(c, c.q+p.groups())
		return took
	}
	for _, tc := range m.ToolCalls {
		c.msgs = append(c.msgs, fmt.Appendf(nil, `{"role":"tool","tool_call_id":%s,"content":%s}`,
			mustJSON(p.tb, tc.ID), p.observe(tc.Function.Name, tc.Function.Arguments)))
	}
	return took
}

// observe returns the encoded observation of a tool call, the same bytes
// for the same call.
func (p *manyConvPlayer) observe(name, arguments string) json.RawMessage {
	key := name + "\x00" + arguments
	if o, ok := p.obs[key]; ok {
		return o
	}
	var args struct {
		Query any `json:"query"`
		URL   any `json:"url"`
	}
	_ = json.Unmarshal([]byte(arguments), &args)
	list := func(v any) []string {
		switch v := v.(type) {
		case string:
			return []string{v}
		case []any:
			var out []string
			for _, s := range v {
				if s, ok := s.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
		return nil
	}
	var b strings.Builder
	switch name {
	case policy.ToolSearch:
		for _, q := range list(args.Query) {
			fmt.Fprintf(&b, "## Results for %q\n", q)
			for _, r := range p.world.Search("http://web.sim", q, 5) {
				fmt.Fprintf(&b, "%d. [%s](%s)\n%s\n", r.Position, r.Title, r.Link, r.Snippet)
			}
		}
	case policy.ToolVisit:
		for _, raw := range list(args.URL) {
			text, ok := "", false
			if u, err := url.Parse(raw); err == nil {
				text, ok = p.world.PageText(u.Path)
			}
			if !ok {
				fmt.Fprintf(&b, "%s: page not found\n", raw)
				continue
			}
			if len(text) > manyConvVisitCap {
				text = text[:manyConvVisitCap]
			}
			fmt.Fprintf(&b, "Content of %s:\n%s\n", raw, text)
		}
	default:
		b.WriteString("unknown tool")
	}
	o := mustJSON(p.tb, b.String())
	p.obs[key] = o
	return o
}

// cpuTime returns the process's user and system CPU time.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	cpu, _ := benchproc.Usage(tb)
	return cpu
}

// BenchmarkChatManyConversations measures the server's CPU per chat call
// with many multi-turn executor conversations in flight, as a rollout farm
// keeps them: the conversations are advanced round robin, one turn at a
// time, each call sending the conversation's whole history (system prompt
// with tools, question, earlier assistant turns and tool observations).
// Eight conversations share each question, and observations are the same
// bytes for the same call, so pages and search results recur across
// conversations. Before timing, every conversation plays three turns, so
// the server's caches hold what a steady state holds.
//
// cpu-µs/call is the process's CPU time (all threads, GC included) per
// call and handler-µs/call the handler's wall time; the benchmark's own
// work (building bodies, decoding answers, its GC) is about 25 µs of the
// former, the same at every size. Run
// with a -benchtime of at least the conversation count (e.g. 20000x), so
// that every conversation is advanced during the timed part.
func BenchmarkChatManyConversations(b *testing.B) {
	w, err := web.Generate(manyConvWorld)
	if err != nil {
		b.Fatalf("generate world: %v", err)
	}
	for _, n := range []int{64, 1000, 10000} {
		b.Run(fmt.Sprintf("conversations=%d", n), func(b *testing.B) {
			cfg := testConfig(DialectVLLM)
			cfg.Slots = 1 << 20 // as the rollout benchmarks' sim
			s, _ := MustServer(b, cfg)
			p := newManyConvPlayer(b, s, w, n)
			for range 3 * n {
				p.step()
			}
			var handler time.Duration
			calls := 0
			p.sentMsgs, p.sentBytes = 0, 0
			st0 := promptCacheStats(s)
			cpu0 := cpuTime(b)
			b.ReportAllocs()
			for b.Loop() {
				handler += p.step()
				calls++
			}
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(calls), "cpu-µs/call")
			b.ReportMetric(float64(handler.Microseconds())/float64(calls), "handler-µs/call")
			b.ReportMetric(float64(p.sentMsgs)/float64(calls), "msgs/call")
			st := promptCacheStats(s)
			b.ReportMetric(float64(st.Misses-st0.Misses)/float64(calls), "seg-misses/call")
			b.ReportMetric(float64(st.Cost)/(1<<20), "prompt-cache-MiB")
			b.ReportMetric(float64(st.Entries), "prompt-cache-entries")
			b.ReportMetric(float64(p.sentBytes)/float64(calls), "body-bytes/call")
		})
	}
}
