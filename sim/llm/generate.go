package llm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// genRequest is one generation job after wire decoding, whatever the route.
type genRequest struct {
	promptIDs   []int
	msgs        []Message
	tools       []policy.Tool
	n           int
	maxTokens   int // cap on completion tokens; always positive here
	temperature float64
	// filters are the request's top_p, top_k and min_p.
	filters policy.Filters
	seed    *int64
	stop    []string
	// logprobs asks for per-token logprobs; topLogprobs for that many
	// alternatives per position (the sampled token first).
	logprobs    bool
	topLogprobs int
	// noThinking is chat_template_kwargs enable_thinking=false: the policy's
	// reasoning is dropped (the template prefilled an empty think block).
	noThinking bool
	// counter is the server's request number, mixed into sampling when the
	// request carries no seed.
	counter uint64
	// route names the request's route in the generation log.
	route string
}

// tokenLogprob is the logprob of one output token and its
// alternatives (the sampled token first).
type tokenLogprob struct {
	id      int
	logprob float64
	top     []altLogprob
}

type altLogprob struct {
	id      int
	logprob float64
}

// genChoice is one generated sequence, cut by stop strings and max tokens.
type genChoice struct {
	index   int
	ids     []int  // completion ids; ends with <|im_end|> when stopped on EOS
	text    string // visible text (special tokens skipped), stop string trimmed
	finish  string // "stop", "length" or "abort"
	eos     bool   // stopped on the EOS token
	stopStr string // the stop string matched, if any
	lps     []tokenLogprob
}

// mix is an FNV-1a hasher over integers, the source of every seed and
// top_logprobs alternative so that runs are reproducible across processes.
type mix struct{ h uint64 }

// newMix starts a mix at the FNV-1a hash of tag, computed in place: hash/fnv
// allocates its state, and logprobs start several mixes per output token.
func newMix(tag string) *mix {
	h := uint64(fnvOffset)
	for i := range len(tag) {
		h ^= uint64(tag[i])
		h *= fnvPrime
	}
	return &mix{h: h}
}

// fnvOffset is the 64-bit FNV offset basis.
const fnvOffset = 14695981039346656037

// fnvPrime is the 64-bit FNV prime.
const fnvPrime = 1099511628211

func (m *mix) add(v uint64) *mix {
	m.h = fnvAdd(m.h, v)
	return m
}

// fnvPrime7 is fnvPrime to the seventh power, modulo 2^64.
const fnvPrime7 = fnvPrime * fnvPrime % (1 << 64) * fnvPrime % (1 << 64) * fnvPrime % (1 << 64) *
	fnvPrime % (1 << 64) * fnvPrime % (1 << 64) * fnvPrime % (1 << 64)

// fnvAdd folds the eight little-endian bytes of v into the FNV-1a state h.
// Token ids fit in two bytes, and folding a zero byte is a bare
// multiplication by the prime, so for v < 2^16 the last seven steps collapse
// into one multiplication by fnvPrime7: a prompt's thousands of ids are
// hashed with two multiplications each instead of eight.
func fnvAdd(h, v uint64) uint64 {
	if v < 1<<16 {
		return ((h^v&0xff)*fnvPrime ^ v>>8) * fnvPrime7
	}
	for shift := 0; shift < 64; shift += 8 {
		h ^= (v >> shift) & 0xff
		h *= fnvPrime
	}
	return h
}

func (m *mix) ints(ids []int) *mix {
	m.add(uint64(len(ids)))
	for _, id := range ids {
		m.add(uint64(id))
	}
	return m
}

func (m *mix) sum() uint64 {
	// A final avalanche so nearby inputs give unrelated outputs.
	x := m.h
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// promptMixes returns the states of newMix("sample").ints(ids) and
// newMix("prompt").ints(ids) in one pass over the prompt: the two FNV chains
// are independent, so interleaving them lets the CPU overlap their
// multiplications (a long prompt is thousands of ids).
func promptMixes(ids []int) (sample, prompt mix) {
	a, b := newMix("sample").h, newMix("prompt").h
	a, b = fnvAdd(a, uint64(len(ids))), fnvAdd(b, uint64(len(ids)))
	for _, id := range ids {
		v := uint64(id)
		a, b = fnvAdd(a, v), fnvAdd(b, v)
	}
	return mix{h: a}, mix{h: b}
}

// rngFor returns the sampling RNG of one choice from the prompt's "sample"
// mix (see promptMixes). At temperature 0 it depends on the prompt only, so
// greedy output is independent of every seed.
func (s *Server) rngFor(g *genRequest, sample mix, choice int) *rand.Rand {
	m := &sample
	if g.temperature > 0 {
		m.add(s.cfg.Seed).add(uint64(choice))
		if g.seed != nil {
			m.add(1).add(uint64(*g.seed))
		} else {
			m.add(2).add(g.counter)
		}
	}
	a := m.sum()
	return rand.New(rand.NewPCG(a, newMix("pcg").add(a).sum()))
}

// generate runs the policy for every choice of g and cuts each sequence. It
// stops with ctx's error as soon as ctx ends (the client left, the server
// closed), between choices and within a choice's logprobs.
func (s *Server) generate(ctx context.Context, g *genRequest) ([]genChoice, error) {
	eos := s.tok.SpecialID(IMEnd)
	out := make([]genChoice, 0, g.n)
	sample, prompt := promptMixes(g.promptIDs)
	ph := prompt.sum()
	// One snapshot for every choice: a weight update during the request
	// does not reach it. A pinned request samples with its version's.
	params := s.servedParams(ctx)
	for i := 0; i < g.n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		act := s.pol.Act(policy.Request{Messages: g.msgs, Tools: g.tools, Temperature: g.temperature,
			Filters: g.filters, Logprobs: s.logprobs, Rand: s.rngFor(g, sample, i), Params: params, NoReasoning: g.noThinking})
		full := append(s.tok.Encode(RenderAssistant(act)), eos)
		c, err := s.cut(full, g)
		if err != nil {
			return nil, err
		}
		c.index = i
		if g.logprobs {
			if c.lps, err = s.logprobsFor(ctx, g, ph, c.ids, act.Logprob); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// cut applies stop strings and the token cap to a full sequence (which ends
// with EOS). A stop string ends the sequence at the token that completes it;
// the text is trimmed before it, as vLLM and SGLang do by default.
func (s *Server) cut(full []int, g *genRequest) (genChoice, error) {
	text, err := s.tok.DecodeSkipSpecial(full)
	if err != nil {
		return genChoice{}, err
	}
	c := genChoice{ids: full, text: text, finish: "stop", eos: true}
	pos, match := -1, ""
	for _, st := range g.stop {
		if st == "" {
			continue
		}
		if p := strings.Index(text, st); p >= 0 && (pos < 0 || p < pos) {
			pos, match = p, st
		}
	}
	if pos >= 0 {
		need := pos + len(match)
		// The smallest prefix whose text covers the stop string.
		lo, hi := 1, len(full)
		for lo < hi {
			mid := (lo + hi) / 2
			t, _ := s.tok.DecodeSkipSpecial(full[:mid])
			if len(t) >= need {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		c = genChoice{ids: full[:lo], text: text[:pos], finish: "stop", stopStr: match}
	}
	if len(c.ids) > g.maxTokens {
		ids := c.ids[:g.maxTokens]
		t, err := s.tok.DecodeSkipSpecial(ids)
		if err != nil {
			return genChoice{}, err
		}
		c = genChoice{ids: ids, text: t, finish: "length"}
	}
	return c, nil
}

// logprobsFor reports the logprobs of ids under the policy: the first token
// carries the log-probability of the turn's decisions (turnLogprob, rounded
// to millionths), every other token 0, since the text is deterministic given
// the decisions. Alternatives (top_logprobs) are drawn from ph, the hash
// newMix("prompt").ints(promptIDs).sum(), the position and the token, each
// below the sampled token's logprob, so the same sequence always gets the
// same alternatives. There are never more alternatives than ids that can be
// one (s.plain), whatever the request asked, and ctx is checked at every
// position that draws alternatives.
func (s *Server) logprobsFor(ctx context.Context, g *genRequest, ph uint64, ids []int, turnLogprob float64) ([]tokenLogprob, error) {
	vocab := s.tok.VocabSize()
	want := min(g.topLogprobs, s.plain)
	out := make([]tokenLogprob, len(ids))
	first := math.Round(turnLogprob*1e6) / 1e6
	if first == 0 || math.IsNaN(first) {
		first = 0 // no negative zero on the wire
	}
	for i, id := range ids {
		lp := 0.0
		if i == 0 {
			lp = first
		}
		tl := tokenLogprob{id: id, logprob: lp}
		if want > 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			h := newMix("lp").add(ph).add(uint64(i)).add(uint64(id)).sum()
			tl.top = append(tl.top, altLogprob{id: id, logprob: lp})
			seen := map[int]bool{id: true}
			for j := 1; len(tl.top) < want; j++ {
				alt := int(newMix("alt").add(h).add(uint64(j)).sum() % uint64(vocab))
				if seen[alt] || s.tok.IsSpecial(alt) {
					continue
				}
				seen[alt] = true
				step := 0.5 + float64(newMix("gap").add(h).add(uint64(j)).sum()%1000)/1000
				tl.top = append(tl.top, altLogprob{id: alt, logprob: math.Round((lp-step*float64(len(tl.top)))*1e6) / 1e6})
			}
		}
		out[i] = tl
	}
	return out, nil
}

// latency is the modelled compute time of a sequence of n output tokens.
func (s *Server) latency(n int) time.Duration {
	if n <= 0 {
		return s.cfg.TTFT
	}
	return s.cfg.TTFT + time.Duration(n-1)*s.cfg.PerToken
}

// run admits g into the engine, generates, models the latency and accounts
// the tokens. A pause with mode abort cuts every choice to the tokens
// generated by then (see decoded), with finish reason "abort", as vLLM and
// SGLang answer a non-streaming request aborted mid-generation. Client
// disconnects return ctx's error.
func (s *Server) run(ctx context.Context, g *genRequest) ([]genChoice, error) {
	t, err := s.eng.admit(ctx, len(g.promptIDs))
	if err != nil {
		return nil, err
	}
	// t changes when the KV model preempts and readmits the sequence.
	defer func() { t.release() }()
	choices, err := s.generate(ctx, g)
	if err != nil {
		return nil, err
	}
	longest := 0
	for _, c := range choices {
		longest = max(longest, len(c.ids))
	}
	start := time.Now()
	wait := func() error { return t.wait(ctx, s.latency(longest)) }
	if s.eng.kv != nil {
		wait = func() error { return s.decode(ctx, &t, len(g.promptIDs), longest) }
	}
	if err := wait(); err != nil {
		if !errors.Is(err, errAborted) {
			return nil, err
		}
		n := s.decoded(time.Since(start))
		for i, c := range choices {
			if choices[i], err = s.abortedChoice(c, min(n, len(c.ids))); err != nil {
				return nil, err
			}
		}
	}
	s.account(g, choices)
	return choices, nil
}

// decoded is how many output tokens a sequence has after running for d:
// none before the first token's TTFT, then one per PerToken (all of them
// when PerToken is zero).
func (s *Server) decoded(d time.Duration) int {
	switch {
	case d < s.cfg.TTFT:
		return 0
	case s.cfg.PerToken <= 0:
		return math.MaxInt
	}
	return 1 + int((d-s.cfg.TTFT)/s.cfg.PerToken)
}

// abortedChoice is c aborted after its first n tokens: those tokens, their
// logprobs and text, and finish reason "abort".
func (s *Server) abortedChoice(c genChoice, n int) (genChoice, error) {
	ab := genChoice{index: c.index, ids: c.ids[:n:n], finish: "abort"}
	if c.lps != nil {
		ab.lps = c.lps[:n:n]
	}
	text, err := s.tok.DecodeSkipSpecial(ab.ids)
	if err != nil {
		return genChoice{}, err
	}
	ab.text = text
	return ab, nil
}
