package oneshot

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Task is one question of the fake world, in mgrpo's task file form.
type Task struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Tasks returns the world's n questions: each asks for an item's registry
// code, which one page of the web states.
func Tasks(n int) []Task {
	out := make([]Task, n)
	for i := range out {
		out[i] = Task{
			ID:       fmt.Sprintf("q%03d", i),
			Question: fmt.Sprintf("What is the registry code of item %d in the national catalogue of instruments?", i),
			Answer:   code(i),
		}
	}
	return out
}

// WriteTasks writes tasks as JSON Lines to path.
func WriteTasks(path string, tasks []Task) error {
	var b strings.Builder
	for _, t := range tasks {
		line, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("write tasks: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write tasks: %w", err)
	}
	return nil
}

// code is item i's registry code, the answer to its question.
func code(i int) string { return fmt.Sprintf("RC-%04d-%c", 1000+i*37%9000, 'A'+rune(i%26)) }

// itemOf returns the item number a question or subtask names ("item N"),
// or -1.
func itemOf(text string) int {
	_, rest, ok := strings.Cut(text, "item ")
	if !ok {
		return -1
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return -1
	}
	return n
}

// filler is reasoning-like text of about n words, varied by seed, so
// completions carry as many tokens (and logprob entries) as a short
// thinking model's turn.
func filler(seed, n int) string {
	words := []string{"the", "question", "asks", "for", "a", "code", "so", "I", "should", "check", "what",
		"sources", "say", "and", "then", "compare", "them", "carefully", "before", "answering", "with",
		"confidence", "about", "registry", "item", "catalogue", "page", "result", "first", "it"}
	if seed < 0 {
		seed = -seed
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(seed*7+i*13+i*i)%len(words)])
		if i%12 == 11 {
			b.WriteByte('.')
		}
	}
	b.WriteByte('.')
	return b.String()
}

// turn is what the scripted model says next.
type turn struct {
	reasoning, content string
	calls              []toolCall
}

// script plays the conversation: a request that offers the delegate tool is
// the planner's (delegate once, then answer), any other the executor's
// (search, visit the first result, report). webURL is the web's base URL,
// which the search results link to.
func script(req *chatRequest, webURL string) turn {
	assistants, first := 0, ""
	for _, m := range req.Messages {
		switch {
		case m.Role == "assistant":
			assistants++
		case m.Role == "user" && first == "":
			first = m.text()
		}
	}
	item := itemOf(first)
	planner := strings.Contains(string(req.Tools), `"delegate"`)
	id := func(k string) string { return fmt.Sprintf("chatcmpl-tool-%s%d-%d", k, item, assistants) }
	switch {
	case planner && assistants == 0:
		args, _ := json.Marshal(map[string]string{"task": fmt.Sprintf("Find the registry code of item %d in the national catalogue of instruments, on the catalogue's own page.", item)})
		return turn{reasoning: filler(item, 60), calls: []toolCall{{ID: id("d"), Type: "function", Function: function{Name: "delegate", Arguments: spaced(args)}}}}
	case planner:
		return turn{reasoning: filler(item+1, 40), content: "<answer>" + code(item) + "</answer>"}
	case assistants == 0:
		args, _ := json.Marshal(map[string][]string{"query": {fmt.Sprintf("registry code item %d national catalogue", item)}})
		return turn{reasoning: filler(item+2, 50), calls: []toolCall{{ID: id("s"), Type: "function", Function: function{Name: "search", Arguments: spaced(args)}}}}
	case assistants == 1:
		args, _ := json.Marshal(map[string]any{"url": []string{pageURL(webURL, item, 0)}, "goal": "the registry code"})
		return turn{reasoning: filler(item+3, 50), calls: []toolCall{{ID: id("v"), Type: "function", Function: function{Name: "visit", Arguments: spaced(args)}}}}
	default:
		return turn{reasoning: filler(item+4, 50), content: fmt.Sprintf("The catalogue page of item %d states that its registry code is %s. I found no other source that disagrees.", item, code(item))}
	}
}

// spaced writes compact JSON arguments with a space after each colon and
// comma outside strings, as vLLM's Hermes parser (json.dumps defaults)
// returns them.
func spaced(compact []byte) string {
	var b strings.Builder
	in, esc := false, false
	for _, c := range compact {
		b.WriteByte(c)
		switch {
		case esc:
			esc = false
		case c == '\\' && in:
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ':' || c == ','):
			b.WriteByte(' ')
		}
	}
	return b.String()
}
