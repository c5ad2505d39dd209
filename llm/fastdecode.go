package llm

import (
	"encoding/json"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// Fast decoding of the token-heavy responses.
//
// A chat completion with token capture is mostly numbers: a prompt_token_ids
// array of thousands of ids and, per sampled token, a logprobs.content
// object (token, logprob, bytes, top_logprobs) or an SGLang
// [logprob, id, text] triple. encoding/json spends most of a call's CPU on
// those through reflection. The fast decoders here walk the body once with
// jscan, parse the id arrays and logprob values directly, skip what no
// dialect reads (bytes, an empty top_logprobs), and hand every other member
// (message, usage, finish_reason, …) to encoding/json as a small object, so
// go-openai's own decoding of messages and tool calls still applies.
//
// They are conservative: a body they are not sure of — an escape or a
// non-ASCII byte in a key, a key that matches an owned field only by case
// folding, a duplicate owned key, a number that is not a plain integer where
// an id belongs, a non-empty top_logprobs, more than one choice, a finish
// reason DecodeChatResponse rejects, any JSON error — is decoded again by
// encoding/json, whose result or error is the answer. The fast path
// therefore never returns an error of its own and never disagrees with
// encoding/json on a body it accepts (FuzzFastChat checks this). Each such
// fallback, and each member handed to encoding/json on the way (an unusual
// message, usage or meta_info field), is counted by reason in
// mgrpo_llm_decode_fallback_total (see FallbackSyntax and the reasons
// after it); testdata/servers holds answers shaped as vLLM and SGLang
// write them, which the fast path takes whole.

// chatResult is what the dialects read from a chat completion: the response
// and its first choice, with choices[0].logprobs.content taken out as plain
// values. On the fast path ch.LogProbs.Content is nil.
type chatResult struct {
	resp *ChatResponse
	ch   *ChatChoice
	// logprobs holds the logprob of each logprobs.content entry; it is never
	// nil.
	logprobs []float64
	// tokens holds the entries' tokens, only when they were asked for.
	tokens []string
	// promptText and choicePromptText are the top-level and the choice's
	// prompt_token_ids arrays as written, for a PromptPrefix (slices of the
	// body; empty when the slow path decoded it).
	promptText, choicePromptText []byte
}

// decodeChat decodes a chat completion body for a dialect, with the
// results and errors of DecodeChatResponse (an aborted generation's result
// comes with its error). wantTokens asks for the
// logprob entries' tokens (vLLM's legacy "token_id:N" mode). What the fast
// decoder leaves to encoding/json is counted in met (which may be nil).
func decodeChat(body []byte, wantTokens bool, met *Metrics) (*chatResult, error) {
	return decodeChatPrefix(body, wantTokens, nil, met)
}

// decodeChatPrefix is decodeChat reusing the ids of prefix (see
// PromptPrefix); the results are the same as without it.
func decodeChatPrefix(body []byte, wantTokens bool, prefix *PromptPrefix, met *Metrics) (*chatResult, error) {
	r, fb := fastChat(body, wantTokens, prefix)
	met.fallback(fb)
	if fb.body == "" {
		return r, nil
	}
	return slowChat(body, wantTokens)
}

// slowChat is decodeChat with encoding/json alone. Like
// DecodeChatResponse it returns an aborted generation's result with its
// error.
func slowChat(body []byte, wantTokens bool) (*chatResult, error) {
	resp, ch, err := DecodeChatResponse(body)
	if resp == nil {
		return nil, err
	}
	r := &chatResult{resp: resp, ch: ch, logprobs: []float64{}}
	if ch.LogProbs != nil {
		lps := ch.LogProbs.Content
		r.logprobs = make([]float64, len(lps))
		if wantTokens {
			r.tokens = make([]string, len(lps))
		}
		for i := range lps {
			r.logprobs[i] = lps[i].LogProb
			if wantTokens {
				r.tokens[i] = lps[i].Token
			}
		}
	}
	return r, err
}

// decodeGenerate decodes SGLang's native /generate answer, with the results
// and errors of json.Unmarshal into a GenerateResponse, counting what the
// fast decoder leaves to encoding/json in met (which may be nil).
func decodeGenerate(body []byte, met *Metrics) (*GenerateResponse, error) {
	fast, fb := fastGenerate(body)
	met.fallback(fb)
	if fb.body == "" {
		return fast, nil
	}
	var g GenerateResponse
	if err := json.Unmarshal(body, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// scratch holds a fast decode's reusable buffers.
type scratch struct {
	top, choice, meta restObject
	lps               []float64
	toks              []string
	tlps              []TokenLogprob
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxScratch is the largest buffer kept for reuse.
const maxScratch = 1 << 20

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(sc *scratch) {
	clear(sc.toks)
	if cap(sc.top.buf) > maxScratch || cap(sc.choice.buf) > maxScratch || cap(sc.meta.buf) > maxScratch ||
		cap(sc.lps) > maxScratch/8 || cap(sc.tlps) > maxScratch/16 || cap(sc.toks) > maxScratch/16 {
		return
	}
	scratchPool.Put(sc)
}

// Fields each fast decoder fills itself; a rest key matching one of them
// by case folding makes it give up.
var (
	ownedChatTop = []string{"prompt_token_ids", "choices", "id", "object", "created", "model", "usage",
		"system_fingerprint", "service_tier", "metadata"}
	ownedChatChoice = []string{"token_ids", "prompt_token_ids", "logprobs", "meta_info", "index", "message",
		"finish_reason", "stop_reason", "matched_stop"}
	ownedLogprobs = []string{"content"}
	ownedLPEntry  = []string{"token", "logprob", "bytes", "top_logprobs"}
	ownedMetaInfo = []string{"output_token_logprobs", "id", "finish_reason", "prompt_tokens", "completion_tokens",
		"cached_tokens", "weight_version"}
	ownedGenerate = []string{"output_ids", "meta_info", "text"}
)

// members walks an object, calling member with each key to consume its
// value; member returns false to give up.
func (s *jscan) members(member func(key []byte) bool) bool {
	if !s.Eat('{') {
		return false
	}
	if s.Eat('}') {
		return true
	}
	for {
		key, ok := s.key()
		if !ok || !member(key) {
			return false
		}
		if s.Eat(',') {
			continue
		}
		return s.Eat('}')
	}
}

// rest consumes the value of a member the decoder does not own and adds it
// to r, for encoding/json, recording that it handed over the message or
// another member; it gives up when key folds to an owned name.
func (s *jscan) rest(r *restObject, key []byte, owned []string) bool {
	if foldsTo(key, owned...) {
		return s.fail(FallbackFoldedKey)
	}
	start := s.I
	if !s.Skip(0) {
		return false
	}
	r.add(key, s.B[start:s.I])
	if string(key) == "message" {
		s.handedMessage = true
	} else {
		s.handedMember = true
	}
	return true
}

// once marks bit in seen and reports whether it was clear (see jscan.once,
// which records a duplicate key).
func once(seen *uint, bit uint) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// fastChat is decodeChat's fast path; a fallbacks with a body reason means
// "decode it with encoding/json" (and r is nil).
func fastChat(body []byte, wantTokens bool, prefix *PromptPrefix) (r *chatResult, fb fallbacks) {
	sc := getScratch()
	defer putScratch(sc)
	s := jscan{Scanner: jsonfast.Scanner{B: body}, prefix: prefix}
	resp := new(ChatResponse)
	r = &chatResult{resp: resp}
	var (
		ids        []int32
		promptText []byte
		seen       uint
	)
	sc.top.reset()
	ok := s.members(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "prompt_token_ids":
			if !s.once(&seen, 1) {
				return false
			}
			ids, ok = s.promptIDs()
			promptText = s.promptText
		case "choices":
			if !s.once(&seen, 2) {
				return false
			}
			ok = s.choices(r, sc, wantTokens)
		case "id":
			ok = s.once(&seen, 4) && s.orRest(&sc.top, key, func() bool { return s.textTo(&resp.ID) })
		case "object":
			ok = s.once(&seen, 8) && s.orRest(&sc.top, key, func() bool { return s.textTo(&resp.Object) })
		case "created":
			ok = s.once(&seen, 16) && s.orRest(&sc.top, key, func() bool {
				var v int
				if !s.intTo(&v) {
					return false
				}
				resp.Created = int64(v)
				return true
			})
		case "model":
			ok = s.once(&seen, 32) && s.orRest(&sc.top, key, func() bool { return s.textTo(&resp.Model) })
		case "usage":
			ok = s.once(&seen, 64) && s.orRest(&sc.top, key, func() bool { return s.usage(&resp.Usage) })
		case "system_fingerprint":
			ok = s.once(&seen, 128) && s.orRest(&sc.top, key, func() bool { return s.textTo(&resp.SystemFingerprint) })
		case "service_tier":
			ok = s.once(&seen, 256) && s.orRest(&sc.top, key, func() bool { return s.textTo((*string)(&resp.ServiceTier)) })
		case "metadata":
			ok = s.once(&seen, 512) && s.orRest(&sc.top, key, func() bool { return s.metadata(&resp.Metadata) })
		default:
			ok = s.other(&sc.top, key, ownedChatTop, chatTopFields)
		}
		return ok
	})
	if ok && r.ch == nil {
		ok = s.fail(FallbackNoChoice)
	}
	if !ok || !s.End() || !sc.top.decode(resp) {
		return nil, s.fallbacks(body, false)
	}
	resp.PromptTokenIDs, r.promptText = ids, promptText
	switch r.ch.FinishReason {
	case "abort", "", "null":
		// DecodeChatResponse's errors, with its messages.
		s.fail(FallbackFinishReason)
		return nil, s.fallbacks(body, false)
	}
	return r, s.fallbacks(body, true)
}

// choices consumes a one-element choices array into r.
func (s *jscan) choices(r *chatResult, sc *scratch, wantTokens bool) bool {
	if s.Null() {
		return s.fail(FallbackNoChoice)
	}
	if !s.Eat('[') {
		return false
	}
	if s.Peek() == ']' {
		return s.fail(FallbackNoChoice)
	}
	chs := make([]ChatChoice, 1)
	ch := &chs[0]
	var (
		seen        uint
		logprobs    *openai.LogProbs
		hasLogprobs bool
	)
	sc.choice.reset()
	sc.lps, sc.toks = sc.lps[:0], sc.toks[:0]
	ok := s.members(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "token_ids":
			if !s.once(&seen, 1) {
				return false
			}
			ch.TokenIDs, ok = s.ints()
		case "prompt_token_ids":
			if !s.once(&seen, 2) {
				return false
			}
			ch.PromptTokenIDs, ok = s.promptIDs()
			r.choicePromptText = s.promptText
		case "logprobs":
			if !s.once(&seen, 4) {
				return false
			}
			if s.Null() {
				return true
			}
			hasLogprobs = true
			logprobs = &openai.LogProbs{}
			ok = s.logprobs(sc, wantTokens)
		case "meta_info":
			if !s.once(&seen, 8) {
				return false
			}
			ch.MetaInfo, ok = s.metaInfo(sc)
		case "index":
			ok = s.once(&seen, 16) && s.orRest(&sc.choice, key, func() bool { return s.intTo(&ch.Index) })
		case "message":
			ok = s.once(&seen, 32) && s.orRest(&sc.choice, key, func() bool { return s.message(&ch.Message) })
		case "finish_reason":
			ok = s.once(&seen, 64) && s.orRest(&sc.choice, key, func() bool { return s.textTo((*string)(&ch.FinishReason)) })
		case "stop_reason":
			ok = s.once(&seen, 128) && s.rawTo(&ch.StopReason)
		case "matched_stop":
			ok = s.once(&seen, 256) && s.rawTo(&ch.MatchedStop)
		default:
			ok = s.other(&sc.choice, key, ownedChatChoice, chatChoiceFields)
		}
		return ok
	})
	// A second choice is left to encoding/json: dialects never ask for one.
	if ok && s.Peek() == ',' {
		return s.fail(FallbackNGt1)
	}
	if !ok || !s.Eat(']') || !sc.choice.decode(ch) {
		return false
	}
	ch.LogProbs = logprobs
	r.logprobs = make([]float64, len(sc.lps))
	copy(r.logprobs, sc.lps)
	if wantTokens && hasLogprobs {
		r.tokens = make([]string, len(sc.toks))
		copy(r.tokens, sc.toks)
	}
	r.resp.Choices, r.ch = chs, ch
	return true
}

// logprobs consumes a choice's logprobs object into sc.lps (and sc.toks).
func (s *jscan) logprobs(sc *scratch, wantTokens bool) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		if string(key) != "content" {
			if foldsTo(key, ownedLogprobs...) {
				return s.fail(FallbackFoldedKey)
			}
			return s.Skip(0)
		}
		if !s.once(&seen, 1) {
			return false
		}
		if s.Null() {
			return true
		}
		if !s.Eat('[') {
			return false
		}
		if s.Eat(']') {
			return true
		}
		for {
			if !s.quickEntry(sc, wantTokens) && !s.logprobEntry(sc, wantTokens) {
				return false
			}
			if s.Eat(',') {
				continue
			}
			return s.Eat(']')
		}
	})
}

// logprobEntry consumes one {"token", "logprob", "bytes", "top_logprobs"}
// object. It gives up unless the logprob is there, bytes is null or an
// array of byte values and top_logprobs is null or empty (the dialects ask
// for top_logprobs 0).
func (s *jscan) logprobEntry(sc *scratch, wantTokens bool) bool {
	var (
		seen uint
		lp   float64
		tok  string
	)
	ok := s.members(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "logprob":
			if !s.once(&seen, 1) {
				return false
			}
			lp, ok = s.Float()
		case "token":
			if !s.once(&seen, 2) {
				return false
			}
			if wantTokens {
				tok, ok = s.text()
			} else if ok = s.Null(); !ok {
				_, _, ok = s.Str()
			}
		case "bytes":
			if !s.once(&seen, 4) {
				return false
			}
			ok = s.byteArray()
		case "top_logprobs":
			if !s.once(&seen, 8) {
				return false
			}
			s.WS()
			at := s.I
			if ok = s.emptyArray(); !ok {
				// A whole array, not an empty one, holds alternatives the
				// dialects did not ask for.
				if s.I = at; s.Peek() == '[' && s.Skip(0) {
					return s.fail(FallbackTopLogprobs)
				}
			}
		default:
			if foldsTo(key, ownedLPEntry...) {
				return s.fail(FallbackFoldedKey)
			}
			ok = s.Skip(0)
		}
		return ok
	})
	if !ok || seen&1 == 0 {
		return false
	}
	sc.lps = append(sc.lps, lp)
	if wantTokens {
		sc.toks = append(sc.toks, tok)
	}
	return true
}

// metaInfo consumes SGLang's meta_info (null is nil).
func (s *jscan) metaInfo(sc *scratch) (*MetaInfo, bool) {
	if s.Null() {
		return nil, true
	}
	mi := new(MetaInfo)
	var (
		seen uint
		tlps []TokenLogprob
	)
	sc.meta.reset()
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "output_token_logprobs":
			if !s.once(&seen, 1) {
				return false
			}
			var ok bool
			tlps, ok = s.tokenLogprobs(sc)
			return ok
		case "id":
			return s.once(&seen, 2) && s.orRest(&sc.meta, key, func() bool { return s.textTo(&mi.ID) })
		case "finish_reason":
			return s.once(&seen, 4) && s.rawTo(&mi.FinishReason)
		case "prompt_tokens":
			return s.once(&seen, 8) && s.orRest(&sc.meta, key, func() bool { return s.intTo(&mi.PromptTokens) })
		case "completion_tokens":
			return s.once(&seen, 16) && s.orRest(&sc.meta, key, func() bool { return s.intTo(&mi.CompletionTokens) })
		case "cached_tokens":
			return s.once(&seen, 32) && s.orRest(&sc.meta, key, func() bool { return s.intTo(&mi.CachedTokens) })
		case "weight_version":
			return s.once(&seen, 64) && s.orRest(&sc.meta, key, func() bool { return s.textTo(&mi.WeightVersion) })
		}
		return s.other(&sc.meta, key, ownedMetaInfo, metaInfoFields)
	})
	if !ok || !sc.meta.decode(mi) {
		return nil, false
	}
	mi.OutputTokenLogprobs = tlps
	return mi, true
}

// tokenLogprobs consumes output_token_logprobs: [[logprob, id, text], …],
// as TokenLogprob.UnmarshalJSON reads it.
func (s *jscan) tokenLogprobs(sc *scratch) ([]TokenLogprob, bool) {
	if s.Null() {
		return nil, true
	}
	if !s.Eat('[') {
		return nil, false
	}
	if s.Eat(']') {
		return []TokenLogprob{}, true
	}
	sc.tlps = sc.tlps[:0]
	for {
		if !s.Eat('[') {
			return nil, false
		}
		lp, ok := s.Float()
		if !ok || !s.Eat(',') {
			return nil, false
		}
		id, ok := s.int32()
		if !ok {
			return nil, false
		}
		for s.Eat(',') {
			if !s.Skip(0) {
				return nil, false
			}
		}
		if !s.Eat(']') {
			return nil, false
		}
		sc.tlps = append(sc.tlps, TokenLogprob{Logprob: lp, ID: id})
		if s.Eat(',') {
			continue
		}
		if !s.Eat(']') {
			return nil, false
		}
		out := make([]TokenLogprob, len(sc.tlps))
		copy(out, sc.tlps)
		return out, true
	}
}

// fastGenerate is decodeGenerate's fast path (see fastChat).
func fastGenerate(body []byte) (*GenerateResponse, fallbacks) {
	sc := getScratch()
	defer putScratch(sc)
	s := jscan{Scanner: jsonfast.Scanner{B: body}}
	g := new(GenerateResponse)
	var (
		seen uint
		ids  []int32
		mi   *MetaInfo
	)
	sc.top.reset()
	ok := s.members(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "output_ids":
			if !s.once(&seen, 1) {
				return false
			}
			ids, ok = s.ints()
		case "meta_info":
			if !s.once(&seen, 2) {
				return false
			}
			mi, ok = s.metaInfo(sc)
		case "text":
			ok = s.once(&seen, 4) && s.orRest(&sc.top, key, func() bool { return s.textTo(&g.Text) })
		default:
			ok = s.other(&sc.top, key, ownedGenerate, generateFields)
		}
		return ok
	})
	if !ok || !s.End() || !sc.top.decode(g) {
		return nil, s.fallbacks(body, false)
	}
	g.OutputIDs = ids
	if mi != nil {
		g.MetaInfo = *mi
	}
	return g, s.fallbacks(body, true)
}
