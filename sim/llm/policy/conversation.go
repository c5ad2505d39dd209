package policy

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mgrpo/mgrpo/sim/web"
)

// Tool names the policy recognizes. They are the contract between the
// simulated model and the agents that call it: a request offering
// ToolDelegate makes the policy a planner; one offering ToolSearch or
// ToolVisit (and no ToolDelegate) makes it an executor.
const (
	// ToolDelegate hands a subtask to an executor: {"task": string}.
	ToolDelegate = "delegate"
	// ToolSearch runs web searches: {"query": [string, …]}.
	ToolSearch = "search"
	// ToolVisit reads pages: {"url": [string, …], "goal": string}.
	ToolVisit = "visit"
	// ToolNotes is the notes store of the sim's MCP server (sim/mcptools):
	// {"entity": string}. An executor offered it (under this name, or
	// prefixed as SERVER_notes_lookup) looks up each entity it works on
	// there once before it visits or searches; one not offered it plays as
	// before.
	ToolNotes = "notes_lookup"
)

// call is one well-formed tool call the policy made in an earlier turn.
type call struct {
	name  string
	task  string   // delegate
	query []string // search
	url   []string // visit
	goal  string   // visit
	raw   string   // the arguments text, for commitment checks
	// lowRaw is strings.ToLower(raw), computed once: commitment checks
	// look for many names in every call.
	lowRaw string
}

// result is one tool message with the tool it answers, when known.
type result struct {
	name string
	text string
	// fresh marks results that arrived after the latest assistant turn,
	// that is, text the model reads for the first time now.
	fresh bool
}

// conversation is the state the policy rebuilds from a request's messages
// on every turn; the policy keeps nothing between calls.
type conversation struct {
	task      string   // the first user message
	answerTag bool     // the prompt asks for <answer> tags
	turns     int      // assistant messages so far
	calls     []call   // well-formed tool calls of earlier assistant turns
	results   []result // tool messages, in order
	laterUser []string // user messages after the first
}

// readConversation rebuilds the state from msgs, parsing tool calls
// through cc.
func readConversation(msgs []Message, cc *callCache) conversation {
	var c conversation
	seenUser := false
	names := map[string]string{} // tool-call ID → tool name
	var pending []string         // names of the latest assistant turn's calls, for tool messages without IDs
	lastAssistant := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			lastAssistant = i
		}
	}
	for i, m := range msgs {
		if (m.Role == "system" || m.Role == "user") && strings.Contains(m.Content, "<answer>") {
			c.answerTag = true
		}
		switch m.Role {
		case "user":
			if !seenUser {
				c.task = m.Content
				seenUser = true
			} else {
				c.laterUser = append(c.laterUser, m.Content)
			}
		case "assistant":
			c.turns++
			pending = pending[:0]
			for _, tc := range m.ToolCalls {
				pending = append(pending, tc.Name)
				if tc.ID != "" {
					names[tc.ID] = tc.Name
				}
				if cl, ok := parseCallCached(cc, tc); ok {
					c.calls = append(c.calls, cl)
				}
			}
		case "tool":
			name := m.Name
			if n, ok := names[m.ToolCallID]; ok && name == "" {
				name = n
			}
			if name == "" && len(pending) > 0 {
				name = pending[0]
			}
			if len(pending) > 0 {
				pending = pending[1:]
			}
			c.results = append(c.results, result{name: name, text: m.Content, fresh: i > lastAssistant})
		}
	}
	return c
}

// parseCall decodes a tool call's arguments; ok is false when they are not
// a JSON object the named tool accepts.
func parseCall(tc ToolCall) (call, bool) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil || args == nil {
		return call{}, false
	}
	cl := call{name: tc.Name, raw: tc.Arguments, lowRaw: strings.ToLower(tc.Arguments)}
	switch tc.Name {
	case ToolDelegate:
		cl.task = stringArg(args["task"])
		return cl, cl.task != ""
	case ToolSearch:
		cl.query = listArg(args["query"])
		return cl, len(cl.query) > 0
	case ToolVisit:
		cl.url = listArg(args["url"])
		cl.goal = stringArg(args["goal"])
		return cl, len(cl.url) > 0
	}
	return cl, true
}

func stringArg(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// listArg accepts a list of strings or a single string.
func listArg(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	if s := stringArg(raw); s != "" {
		return []string{s}
	}
	return nil
}

// committed reports whether an earlier tool call of this conversation names
// entity, which means the model already acted on a belief that leads to it.
func (c *conversation) committed(entity string) bool {
	if entity == "" {
		return false
	}
	for _, cl := range c.calls {
		if containsLowered(cl.lowRaw, entity) {
			return true
		}
	}
	return false
}

// delegations returns the chains of the subtasks delegated so far.
func (c *conversation) delegations() []web.Chain {
	var out []web.Chain
	for _, cl := range c.calls {
		if cl.name != ToolDelegate {
			continue
		}
		if ch, ok := web.ParseSubtask(cl.task); ok {
			out = append(out, ch)
		} else if ch, ok := web.ParseQuestion(cl.task); ok {
			out = append(out, ch)
		}
	}
	return out
}

// searched returns the set of query strings already searched.
func (c *conversation) searched() map[string]bool {
	out := map[string]bool{}
	for _, cl := range c.calls {
		for _, q := range cl.query {
			out[strings.ToLower(strings.TrimSpace(q))] = true
		}
	}
	return out
}

// lookedUp reports whether an earlier turn called the notes tool named
// tool about entity.
func (c *conversation) lookedUp(tool, entity string) bool {
	for _, cl := range c.calls {
		if cl.name != tool {
			continue
		}
		var args struct {
			Entity string `json:"entity"`
		}
		if json.Unmarshal([]byte(cl.raw), &args) == nil && strings.EqualFold(strings.TrimSpace(args.Entity), entity) {
			return true
		}
	}
	return false
}

// visited returns the set of URLs already visited.
func (c *conversation) visited() map[string]bool {
	out := map[string]bool{}
	for _, cl := range c.calls {
		for _, u := range cl.url {
			out[normalizeURL(u)] = true
		}
	}
	return out
}

func normalizeURL(u string) string {
	return strings.TrimRight(strings.TrimSpace(u), "/")
}

// evidence is one fact the model has read, with where it read it.
type evidence struct {
	fact    web.Fact
	snippet bool // seen only in a search result snippet
	cut     bool // read from a snippet sentence cut short by an ellipsis
	fresh   bool // read for the first time this turn
}

// reportFacts returns the facts in tool results and later user messages:
// what executors (or the user) reported to a planner or answerer.
func (c *conversation) reportFacts() []evidence {
	var out []evidence
	for _, r := range c.results {
		for _, f := range web.ParseFacts(r.text) {
			out = append(out, evidence{fact: f, fresh: r.fresh})
		}
	}
	for _, u := range c.laterUser {
		for _, f := range web.ParseFacts(u) {
			out = append(out, evidence{fact: f})
		}
	}
	return out
}

// toolFacts returns the facts an executor has read: page facts from visit
// results and snippet facts from search results, parsed through fc (see
// parseToolText for the cut ones).
func (c *conversation) toolFacts(fc *factCache) []evidence {
	var out []evidence
	for _, r := range c.results {
		snippet := r.name == ToolSearch
		for _, p := range facts(fc, r.text, snippet) {
			out = append(out, evidence{fact: p.fact, snippet: snippet, cut: p.cut, fresh: r.fresh})
		}
	}
	return out
}

var ellipsis = regexp.MustCompile(`\.\.\.|…`)

var missPattern = regexp.MustCompile(`I could not find the ([a-z][a-z ]*?) of ([^.\n]+?)\.`)

// misses returns the (relation, subject) pairs reported as not found.
func (c *conversation) misses() []web.Fact {
	var out []web.Fact
	texts := make([]string, 0, len(c.results)+len(c.laterUser))
	for _, r := range c.results {
		texts = append(texts, r.text)
	}
	texts = append(texts, c.laterUser...)
	for _, t := range texts {
		for _, m := range missPattern.FindAllStringSubmatch(t, -1) {
			out = append(out, web.Fact{Relation: m[1], Subject: strings.TrimSpace(m[2])})
		}
	}
	return out
}

// containsPhrase reports whether text holds s as a whole phrase,
// case-insensitively, so that "Velmora Lab" is not found inside
// "Velmora Labs". It works on any bytes, valid UTF-8 or not.
func containsPhrase(text, s string) bool { return containsLowered(strings.ToLower(text), s) }

// containsLowered is containsPhrase for a text already lower-cased
// (lt == strings.ToLower(text)).
func containsLowered(lt, s string) bool {
	if strings.TrimSpace(s) == "" {
		return false
	}
	ls := strings.ToLower(s)
	for from := 0; from <= len(lt)-len(ls); {
		i := strings.Index(lt[from:], ls)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(lt[:i])
		after, _ := utf8.DecodeRuneInString(lt[i+len(ls):])
		if (i == 0 || !isWordRune(before)) && (i+len(ls) == len(lt) || !isWordRune(after)) {
			return true
		}
		from = i + 1
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
