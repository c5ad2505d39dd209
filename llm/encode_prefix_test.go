package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// histMsg keeps the tables short.
type histMsg = openai.ChatCompletionMessage

// prefixHistory returns a history that sets every field appendMessage
// writes somewhere, with text that needs escaping.
func prefixHistory() []histMsg {
	return []histMsg{
		{Role: "system", Content: "You are a research executor.\nUse <tools> & \"cite\" sources."},
		{Role: "user", Content: "Who wrote \u2028 «Les Misérables»?", Name: "alice"},
		{Role: "assistant", ReasoningContent: "search first", ToolCalls: []openai.ToolCall{
			{Index: ptr(0), ID: "c1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "search", Arguments: `{"query":"Les Misérables author"}`}},
			{ID: "c2", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "open", Arguments: `{"url":"https://x/?a=1&b=2"}`}},
		}},
		{Role: "tool", Content: "Victor Hugo (1862)", ToolCallID: "c1", Name: "search"},
		{Role: "assistant", Refusal: "no", FunctionCall: &openai.FunctionCall{Name: "f", Arguments: "{}"}},
		{Role: "tool", Content: "<html>\xff</html>", ToolCallID: "c2"},
		{Role: "assistant", ReasoningContent: "done", MultiContent: []openai.ChatMessagePart{}},
	}
}

// cloneMessages returns a deep copy of msgs sharing no memory with it,
// strings included.
func cloneMessages(msgs []histMsg) []histMsg {
	out := make([]histMsg, len(msgs))
	for i, m := range msgs {
		c := histMsg{Role: strings.Clone(m.Role), Content: strings.Clone(m.Content), Refusal: strings.Clone(m.Refusal),
			Name: strings.Clone(m.Name), ReasoningContent: strings.Clone(m.ReasoningContent), ToolCallID: strings.Clone(m.ToolCallID)}
		if m.MultiContent != nil {
			c.MultiContent = append([]openai.ChatMessagePart{}, m.MultiContent...)
		}
		if m.FunctionCall != nil {
			c.FunctionCall = &openai.FunctionCall{Name: strings.Clone(m.FunctionCall.Name), Arguments: strings.Clone(m.FunctionCall.Arguments)}
		}
		if m.ToolCalls != nil {
			c.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
			for k, tc := range m.ToolCalls {
				c.ToolCalls[k] = openai.ToolCall{ID: strings.Clone(tc.ID), Type: openai.ToolType(strings.Clone(string(tc.Type))),
					Function: openai.FunctionCall{Name: strings.Clone(tc.Function.Name), Arguments: strings.Clone(tc.Function.Arguments)}}
				if tc.Index != nil {
					c.ToolCalls[k].Index = ptr(*tc.Index)
				}
			}
		}
		out[i] = c
	}
	return out
}

// prefixRequest is a request as the dialects build it around msgs.
func prefixRequest(msgs []histMsg) ChatRequest {
	c := &Client{model: "qwen/3"}
	s := Sampling{Temperature: ptr(0.0), TopK: ptr(20), MaxTokens: 64, Seed: ptr(int64(7))}
	cr := c.chatRequest(Request{Messages: msgs, Tools: executorTools()}, s)
	cr.LogProbs, cr.TopLogProbs, cr.ReturnTokenIDs = true, ptr(0), true
	return cr
}

// checkPrefixEncode fails unless encoding msgs with p gives the body and
// error of encoding them without it, and then checks what p remembers.
// It returns how many leading messages p could reuse and whether the fast
// path took the request.
func checkPrefixEncode(t testing.TB, p *PromptPrefix, msgs []histMsg) (reused int, fast bool) {
	t.Helper()
	cr := prefixRequest(msgs)
	want, werr := encodeChatRequest(cr, nil)
	reused = p.reusable(msgs)
	got, gerr := encodeChatRequestPrefix(cr, new(toolsCache), p)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("error %v, without prefix %v", gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("with prefix:\n%s\nwithout:\n%s", got, want)
	}
	_, fast = fastChatRequest(cr, nil)
	if msgs == nil {
		return reused, fast
	}
	// p remembers msgs up to the first message the fast path refuses.
	plain := 0
	for plain < len(msgs) && plainContent(&msgs[plain]) {
		plain++
	}
	if got := p.reusable(msgs); got != plain {
		t.Fatalf("after the call the prefix reuses %d messages, want %d", got, plain)
	}
	if wantJSON, _ := appendMessages(nil, msgs[:plain]); plain > 0 && !bytes.Equal(p.msgsJSON[:p.sent[plain-1].end], wantJSON[:len(wantJSON)-1]) {
		t.Fatalf("remembered %s, want %s", p.msgsJSON[:p.sent[plain-1].end], wantJSON)
	}
	return reused, fast
}

func TestPromptPrefixEncodesTheSame(t *testing.T) {
	parts := []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "a"}}
	all := []int{len(prefixHistory())}
	for _, tc := range []struct {
		name string
		// prev is how many messages of the history each previous call
		// sent; next edits the history (in place or not) and returns the
		// next call's messages.
		prev   []int
		next   func(h []histMsg) []histMsg
		reused int
		fast   bool
	}{
		{"same messages", all, func(h []histMsg) []histMsg { return h }, 7, true},
		{"appended messages", []int{3}, func(h []histMsg) []histMsg { return h }, 3, true},
		{"appended one by one", []int{1, 2, 3, 4, 5, 6}, func(h []histMsg) []histMsg { return h }, 6, true},
		{"rebuilt equal copies", all, cloneMessages, 7, true},
		{"changed earlier message", all, func(h []histMsg) []histMsg { h[1].Content += "!"; return h }, 1, true},
		{"changed first message", all, func(h []histMsg) []histMsg { h[0].Role = "developer"; return h }, 0, true},
		{"changed last message", all, func(h []histMsg) []histMsg { h[6].ReasoningContent = "Hugo."; return h }, 6, true},
		{"content with empty multi-content", all, func(h []histMsg) []histMsg { h[6].Content = "Hugo."; return h }, 6, false},
		{"changed tool call arguments in place", all, func(h []histMsg) []histMsg {
			h[2].ToolCalls[1].Function.Arguments = `{"url":"https://y"}`
			return h
		}, 2, true},
		{"changed tool call index in place", all, func(h []histMsg) []histMsg { *h[2].ToolCalls[0].Index = 1; return h }, 2, true},
		{"dropped tool call index", all, func(h []histMsg) []histMsg { h[2].ToolCalls[0].Index = nil; return h }, 2, true},
		{"changed tool call id", all, func(h []histMsg) []histMsg { h[2].ToolCalls[0].ID = "c9"; return h }, 2, true},
		{"changed tool call type", all, func(h []histMsg) []histMsg { h[2].ToolCalls[1].Type = "web"; return h }, 2, true},
		{"removed a tool call", all, func(h []histMsg) []histMsg { h[2].ToolCalls = h[2].ToolCalls[:1]; return h }, 2, true},
		{"no tool calls", all, func(h []histMsg) []histMsg { h[2].ToolCalls = []openai.ToolCall{}; return h }, 2, true},
		{"changed function call in place", all, func(h []histMsg) []histMsg { h[4].FunctionCall.Name = "g"; return h }, 4, true},
		{"dropped function call", all, func(h []histMsg) []histMsg { h[4].FunctionCall = nil; return h }, 4, true},
		{"empty function call", all, func(h []histMsg) []histMsg { h[4].FunctionCall = &openai.FunctionCall{}; return h }, 4, true},
		{"changed tool_call_id", all, func(h []histMsg) []histMsg { h[3].ToolCallID = "c2"; return h }, 3, true},
		{"changed name", all, func(h []histMsg) []histMsg { h[3].Name = ""; return h }, 3, true},
		{"changed refusal", all, func(h []histMsg) []histMsg { h[4].Refusal = "No"; return h }, 4, true},
		{"changed reasoning", all, func(h []histMsg) []histMsg { h[2].ReasoningContent = ""; return h }, 2, true},
		{"replaced a message", all, func(h []histMsg) []histMsg { h[5] = toolMsg("<html>\xff</html>", "c2"); return h }, 7, true},
		{"messages shortened", all, func(h []histMsg) []histMsg { return h[:2] }, 2, true},
		{"messages shortened then changed", all, func(h []histMsg) []histMsg { h = h[:4]; h[3].Content = "?"; return h }, 3, true},
		{"no messages", all, func(h []histMsg) []histMsg { return h[:0] }, 0, true},
		{"nil messages", all, func([]histMsg) []histMsg { return nil }, 0, false},
		{"multi-content", all, func(h []histMsg) []histMsg { h[3].Content, h[3].MultiContent = "", parts; return h }, 3, false},
		{"multi-content first", all, func(h []histMsg) []histMsg { h[0].Content, h[0].MultiContent = "", parts; return h }, 0, false},
		{"both contents", all, func(h []histMsg) []histMsg { h[5].MultiContent = []openai.ChatMessagePart{}; return h }, 5, false},
		{"empty multi-content", all, func(h []histMsg) []histMsg {
			h[5].Content, h[5].MultiContent = "", []openai.ChatMessagePart{}
			return h
		}, 5, true},
		{"empty multi-content dropped", all, func(h []histMsg) []histMsg { h[6].MultiContent = nil; return h }, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := prefixHistory()
			var p PromptPrefix
			for _, n := range tc.prev {
				checkPrefixEncode(t, &p, h[:n])
			}
			reused, fast := checkPrefixEncode(t, &p, tc.next(h))
			if reused != tc.reused || fast != tc.fast {
				t.Errorf("reused %d messages, fast path %v; want %d, %v", reused, fast, tc.reused, tc.fast)
			}
			// Whatever happened, the original history encodes the same
			// again.
			checkPrefixEncode(t, &p, prefixHistory())
		})
	}
}

// TestPromptPrefixReusesMessages checks that the reused messages are
// copied from the remembered bytes, not encoded again: a byte planted in
// the remembered encoding of a message shows up in the next body, and only
// the messages after the first changed one are encoded afresh.
func TestPromptPrefixReusesMessages(t *testing.T) {
	h := prefixHistory()
	var p PromptPrefix
	checkPrefixEncode(t, &p, h[:4])
	at := bytes.Index(p.msgsJSON, []byte("Victor Hugo (1862)"))
	if at < 0 {
		t.Fatalf("remembered %s", p.msgsJSON)
	}
	p.msgsJSON[at] = 'W'
	body, err := encodeChatRequestPrefix(prefixRequest(h), nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte("Wictor Hugo (1862)")) || bytes.Contains(body, []byte("Victor Hugo (1862)")) {
		t.Fatalf("message 3 was encoded again instead of copied:\n%s", body)
	}
	if got, want := len(p.sent), len(h); got != want {
		t.Fatalf("prefix remembers %d messages, want %d", got, want)
	}

	// Message 4 changes: the messages before it are still copied, those
	// after it are encoded again.
	p.msgsJSON[bytes.Index(p.msgsJSON, []byte("search first"))] = 'S'
	html := []byte(`\u003chtml`)
	at = bytes.Index(p.msgsJSON, html)
	if at < 0 {
		t.Fatalf("remembered %s", p.msgsJSON)
	}
	p.msgsJSON[at+len(html)-1] = 'L'
	h[4].Refusal = "No"
	body, err = encodeChatRequestPrefix(prefixRequest(h), nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Search first", "Wictor Hugo", `"No"`, string(html)} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("want messages 0-3 copied and 4-6 encoded, body lacks %s:\n%s", want, body)
		}
	}
}

// TestPromptPrefixComparesEveryField changes every field of a message that
// sets them all, one at a time, down to tool call indexes: each change
// must stop the message being reused. A field go-openai adds fails here
// until sentMessage compares it.
func TestPromptPrefixComparesEveryField(t *testing.T) {
	base := prefixHistory()[2]
	base.Content, base.Refusal, base.Name, base.ToolCallID = "c", "r", "n", "id"
	base.FunctionCall = &openai.FunctionCall{Name: "f", Arguments: "{}"}
	var p PromptPrefix
	if _, ok := p.appendMessages([]histMsg{base}); !ok {
		t.Fatal("fast path refused the base message")
	}
	m := cloneMessages([]histMsg{base})
	changes := 0
	changeEach(t, reflect.ValueOf(&m[0]).Elem(), "message", func(field string) {
		changes++
		if n := p.reusable(m); n != 0 {
			t.Errorf("%s changed, message still reused", field)
		}
	})
	if n := p.reusable(m); n != 1 {
		t.Fatalf("restored message not reused")
	}
	if changes < 20 {
		t.Fatalf("only %d changes tried", changes)
	}
}

// changeEach changes each leaf of v in turn (strings, ints, nil-ness of
// pointers, length of slices), calls check, and restores it.
func changeEach(t *testing.T, v reflect.Value, path string, check func(string)) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		old := v.String()
		v.SetString(old + "x")
		check(path)
		v.SetString(old)
	case reflect.Int:
		old := v.Int()
		v.SetInt(old + 1)
		check(path)
		v.SetInt(old)
	case reflect.Pointer:
		old := v.Interface()
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			check(path + " set")
		} else {
			v.SetZero()
			check(path + " nil")
		}
		v.Set(reflect.ValueOf(old))
		if !v.IsNil() {
			changeEach(t, v.Elem(), path, check)
		}
	case reflect.Slice:
		old := v.Interface()
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			check(path + " one element")
		} else {
			v.SetZero()
			check(path + " nil")
			v.Set(reflect.Append(reflect.ValueOf(old), reflect.Zero(v.Type().Elem())))
			check(path + " appended")
		}
		v.Set(reflect.ValueOf(old))
		for i := range v.Len() {
			changeEach(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), check)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			changeEach(t, v.Field(i), path+"."+v.Type().Field(i).Name, check)
		}
	default:
		t.Fatalf("%s: a %s field; teach sentMessage and this test about it", path, v.Kind())
	}
}

// TestPromptPrefixThroughDialects checks that Request.Prefix reaches the
// encoder in every dialect: after each call the prefix holds the call's
// messages, and the server received them exactly as encoded without it.
func TestPromptPrefixThroughDialects(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang, DialectOpenAI} {
		t.Run(dialect, func(t *testing.T) {
			var (
				mu   sync.Mutex
				sent json.RawMessage
			)
			record := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(b))
					var req struct {
						Messages json.RawMessage `json:"messages"`
					}
					if r.URL.Path == "/v1/chat/completions" && json.Unmarshal(b, &req) == nil {
						mu.Lock()
						sent = req.Messages
						mu.Unlock()
					}
					next.ServeHTTP(w, r)
				})
			}
			simDialect := dialect
			if dialect == DialectOpenAI {
				simDialect = DialectVLLM
			}
			s := mustSim(t, simConfig(simDialect, 3), record)
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: dialect != DialectOpenAI})
			w := mustWorld(t)
			msgs := []histMsg{{Role: "system", Content: "You are a research executor."}, {Role: "user", Content: w.Questions[0].Question}}
			var p PromptPrefix
			for turn := range 3 {
				tr, err := c.Chat(context.Background(), Request{Messages: msgs, Tools: executorTools(), Prefix: &p,
					Sampling: &Sampling{Seed: ptr(int64(turn)), MaxTokens: 512}})
				if err != nil {
					t.Fatal(err)
				}
				want, _ := appendMessages(nil, msgs)
				mu.Lock()
				got := sent
				mu.Unlock()
				if !bytes.Equal(got, want) {
					t.Fatalf("turn %d: server got messages\n%s\nwant\n%s", turn, got, want)
				}
				if n := p.reusable(msgs); n != len(msgs) {
					t.Fatalf("turn %d: prefix holds %d of %d messages", turn, n, len(msgs))
				}
				msgs = append(msgs, tr.Message)
				if len(tr.ToolCalls) == 0 {
					msgs = append(msgs, histMsg{Role: "user", Content: "Go on."})
				}
				for _, call := range tr.ToolCalls {
					msgs = append(msgs, toolMsg(runTool(w, call), call.ID))
				}
			}
		})
	}
}

// benchTrajectory returns a 10-message history of about 8 KB: a system
// prompt, a question, then four rounds of an assistant message with
// reasoning and a tool call and a tool result of about 1.3 KB.
func benchTrajectory(round string) []histMsg {
	page := strings.Repeat("Victor Hugo's \"Les Misérables\" (1862) <p>follows Jean Valjean & Javert.</p>\n", 17)
	msgs := []histMsg{
		{Role: "system", Content: strings.Repeat("You are a research executor. Use the tools; cite <sources> & \"quote\" them.\n", 8)},
		{Role: "user", Content: "Who wrote Les Misérables, and when was it first published?"},
	}
	for i := range 4 {
		id := fmt.Sprintf("call_%d%s", i, round)
		msgs = append(msgs,
			histMsg{Role: "assistant", ReasoningContent: "I should search for the author and the date. " + round, ToolCalls: []openai.ToolCall{
				{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "search", Arguments: fmt.Sprintf(`{"query":"Les Misérables author %d"}`, i)}}}},
			toolMsg(page+round, id))
	}
	return msgs
}

// BenchmarkChatRequestEncodePrefix encodes the requests of a trajectory
// whose history grows to about 8 KB in 10 messages, with and without a
// PromptPrefix. "trajectory" is one op per trajectory (5 calls of 2, 4, 6,
// 8 and 10 messages, the prefix starting empty); "call" is one op per call
// in the steady state: 8 messages known, the last 2 new.
func BenchmarkChatRequestEncodePrefix(b *testing.B) {
	msgs := benchTrajectory("")
	js, _ := appendMessages(nil, msgs)
	// The last round in two versions, so that each call of "call" has 2
	// new messages.
	alt := [2][]histMsg{msgs, append(msgs[:8:8], benchTrajectory("'")[8:]...)}
	for _, prefix := range []bool{false, true} {
		name := "prefix=none"
		if prefix {
			name = "prefix=on"
		}
		b.Run("trajectory/"+name, func(b *testing.B) {
			tools, cr := new(toolsCache), prefixRequest(nil)
			b.SetBytes(int64(len(js)))
			b.ReportAllocs()
			for b.Loop() {
				var p *PromptPrefix
				if prefix {
					p = new(PromptPrefix)
				}
				for n := 2; n <= len(msgs); n += 2 {
					cr.Messages = msgs[:n]
					if _, err := encodeChatRequestPrefix(cr, tools, p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("call/"+name, func(b *testing.B) {
			tools, cr := new(toolsCache), prefixRequest(nil)
			var p *PromptPrefix
			if prefix {
				p = new(PromptPrefix)
			}
			b.SetBytes(int64(len(js)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i ^= 1
				cr.Messages = alt[i]
				if _, err := encodeChatRequestPrefix(cr, tools, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
