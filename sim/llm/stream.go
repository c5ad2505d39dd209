package llm

import (
	"net/http"
	"strings"
	"unicode/utf8"
)

// sse writes Server-Sent Events, flushing after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// startSSE writes the event-stream response head.
func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// data writes one "data: …" event holding v as JSON; it reports whether the
// write succeeded (false once the client is gone).
func (e *sse) data(v any) bool {
	b, err := marshalJSON(v)
	if err != nil {
		return false
	}
	return e.raw(string(b))
}

func (e *sse) raw(s string) bool {
	if _, err := e.w.Write([]byte("data: " + s + "\n\n")); err != nil {
		return false
	}
	if e.f != nil {
		e.f.Flush()
	}
	return true
}

// tokenDelta is what one output token adds to a chat message.
type tokenDelta struct {
	id        int
	reasoning string
	content   string
	calls     []int // indexes of tool calls completed by this token
}

// region is a span of the choice's text and the message field it feeds.
type region struct {
	start, end int
	kind       byte // 'r' reasoning, 'c' content, 't' tool call k (see call)
	call       int
}

// regionsOf locates the parsed fields in the choice's text, in the layout
// RenderAssistant writes and ParseAssistant reads.
func regionsOf(p parsedChoice) []region {
	text := p.text
	var rs []region
	pos := 0
	if p.reasoning != "" {
		start := len(ThinkOpen + "\n")
		rs = append(rs, region{start: start, end: start + len(p.reasoning), kind: 'r'})
		pos = start + len(p.reasoning) + len("\n"+ThinkClose+"\n\n")
	}
	if len(p.calls) == 0 {
		return append(rs, region{start: pos, end: len(text), kind: 'c'})
	}
	rs = append(rs, region{start: pos, end: pos + len(p.content), kind: 'c'})
	cursor := pos + len(p.content)
	for k := range p.calls {
		i := strings.Index(text[cursor:], ToolCallClose)
		if i < 0 {
			break
		}
		end := cursor + i + len(ToolCallClose)
		rs = append(rs, region{start: cursor, end: end, kind: 't', call: k})
		cursor = end
	}
	return rs
}

// deltasOf splits a parsed choice into per-token deltas whose reasoning and
// content concatenate to the non-streaming fields exactly. Text is only
// released at UTF-8 boundaries, so a character split across byte tokens
// arrives whole with the token that completes it.
func (s *Server) deltasOf(p parsedChoice) []tokenDelta {
	rs := regionsOf(p)
	text := p.text
	out := make([]tokenDelta, len(p.ids))
	cum, sent := 0, 0
	for i, id := range p.ids {
		if !s.tok.IsSpecial(id) {
			_, raw, _ := s.tok.Token(id)
			cum = min(cum+len(raw), len(text))
		}
		avail := cum
		for avail > sent && avail < len(text) && !utf8.RuneStart(text[avail]) {
			avail--
		}
		d := tokenDelta{id: id}
		for _, r := range rs {
			lo, hi := max(r.start, sent), min(r.end, avail)
			switch {
			case r.kind == 't':
				if r.end > sent && r.end <= avail {
					d.calls = append(d.calls, r.call)
				}
			case lo < hi && r.kind == 'r':
				d.reasoning += text[lo:hi]
			case lo < hi:
				d.content += text[lo:hi]
			}
		}
		sent = max(sent, avail)
		out[i] = d
	}
	return out
}

// streamChat serves a streaming chat request in the server's dialect.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, job *chatJob) {
	ctx := r.Context()
	t, err := s.eng.admit(ctx, len(job.gen.promptIDs))
	if err != nil {
		return
	}
	defer t.release()
	choices, err := s.generate(ctx, job.gen)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.writeError(w, err)
		return
	}
	version := s.servedVersion(ctx)
	out := startSSE(w)
	cs := newChunker(s, job, version)
	parsed := make([]parsedChoice, len(choices))
	deltas := make([][]tokenDelta, len(choices))
	for i, c := range choices {
		parsed[i] = s.parseChoice(c, job.toolParse)
		deltas[i] = s.deltasOf(parsed[i])
		if !out.data(cs.roleChunk(i, i == 0)) {
			return
		}
	}
	aborted := false
	longest := 0
	for _, d := range deltas {
		longest = max(longest, len(d))
	}
	for step := 0; step < longest && !aborted; step++ {
		wait := s.cfg.PerToken
		if step == 0 {
			wait = s.cfg.TTFT
		}
		if err := t.wait(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return
			}
			aborted = true
			break
		}
		for i := range parsed {
			if step >= len(deltas[i]) {
				continue
			}
			last := step == len(deltas[i])-1
			if !out.data(cs.tokenChunk(parsed[i], deltas[i][step], step, last)) {
				return
			}
		}
	}
	if aborted {
		for i := range parsed {
			parsed[i].finish = "abort"
			if !out.data(cs.abortChunk(i)) {
				return
			}
		}
	}
	s.account(job.gen, choicesOf(parsed))
	if o := job.req.StreamOptions; o != nil && o.IncludeUsage != nil && *o.IncludeUsage {
		if !out.data(cs.usageChunk(parsed)) {
			return
		}
	}
	out.raw("[DONE]")
}

func choicesOf(ps []parsedChoice) []genChoice {
	out := make([]genChoice, len(ps))
	for i, p := range ps {
		out[i] = p.genChoice
	}
	return out
}

// toolCallsOf renders the calls a delta completes.
func toolCallsOf(p parsedChoice, idx []int, id func(k int) string) []streamToolCall {
	var out []streamToolCall
	for _, k := range idx {
		c := p.calls[k]
		out = append(out, streamToolCall{Index: k, ID: id(k), Type: "function", Function: &vllmFunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

// isValidUTF8 reports whether s is valid UTF-8.
func isValidUTF8(s string) bool { return utf8.ValidString(s) }
