package agents

import (
	"embed"
	"fmt"
	"sort"
	"strings"
	"text/template"
)

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// Prompt names: each is a text/template, embedded from prompts/NAME.tmpl and
// overridable from configuration.
const (
	PromptPlannerSystem  = "planner_system"
	PromptPlannerUser    = "planner_user"    // data: .Question
	PromptExecutorSystem = "executor_system" //
	PromptExecutorUser   = "executor_user"   // data: .Task
	PromptSingleSystem   = "single_system"   //
	PromptSingleUser     = "single_user"     // data: .Question
	PromptAnswerNow      = "answer_now"      // data: .Report (true for executors)
	PromptFormatError    = "format_error"    // data: .Reason
)

// Prompts holds the parsed prompt templates. The zero value is not usable:
// start from DefaultPrompts.
type Prompts struct {
	t map[string]*template.Template
}

// DefaultPrompts returns the embedded prompts.
func DefaultPrompts() Prompts {
	p := Prompts{t: make(map[string]*template.Template)}
	entries, err := promptFiles.ReadDir("prompts")
	if err != nil {
		panic(fmt.Sprintf("embedded prompts: %v", err)) // the embed is part of the binary
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".tmpl")
		text, _ := promptFiles.ReadFile("prompts/" + e.Name())
		p.t[name] = template.Must(template.New(name).Option("missingkey=error").Parse(strings.TrimSuffix(string(text), "\n")))
	}
	return p
}

// Names returns the prompt names, sorted.
func (p Prompts) Names() []string {
	names := make([]string, 0, len(p.t))
	for n := range p.t {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// With returns a copy of p with the named prompts replaced by the given
// template texts. An unknown name or a template that does not parse is an
// error naming it.
func (p Prompts) With(overrides map[string]string) (Prompts, error) {
	out := Prompts{t: make(map[string]*template.Template, len(p.t))}
	for n, t := range p.t {
		out.t[n] = t
	}
	for _, name := range sortedKeys(overrides) {
		if _, ok := p.t[name]; !ok {
			return p, fmt.Errorf("prompt %q: unknown (known: %s)", name, strings.Join(p.Names(), ", "))
		}
		t, err := template.New(name).Option("missingkey=error").Parse(overrides[name])
		if err != nil {
			return p, fmt.Errorf("prompt %q: %w", name, err)
		}
		out.t[name] = t
	}
	return out, nil
}

// render executes the named prompt.
func (p Prompts) render(name string, data any) (string, error) {
	t, ok := p.t[name]
	if !ok {
		return "", fmt.Errorf("prompt %q: not defined", name)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("prompt %q: %w", name, err)
	}
	return b.String(), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
