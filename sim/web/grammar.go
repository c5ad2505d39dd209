package web

import (
	"regexp"
	"strings"
)

// The synthetic web writes every fact, question, subtask and report in one
// small English grammar. The generator (this package) writes it and the
// simulated policy (sim/llm) reads it back, so the policy can really play the
// tasks: read a question, split it into hops, search, read pages and report.
//
//	fact:     The <relation> of <subject> is <object>.
//	question: What is the <rN> of the <rN-1> of … the <r1> of <entity>?
//	subtask:  Find the <rK> of … the <r1> of <entity>.
//	miss:     I could not find the <relation> of <subject>.
//
// Entity names and relation names never contain the word " of " and never
// contain a period, so the grammar parses without ambiguity.

// Fact is one statement the synthetic web asserts somewhere on its pages.
type Fact struct {
	Subject  string `json:"subject"`
	Relation string `json:"relation"`
	Object   string `json:"object"`
}

// Chain is a multi-hop question read left to right from the entity outward:
// Relations[0] applies to Entity, Relations[1] to the answer of that, and so
// on; the answer of the last relation is the answer of the question.
type Chain struct {
	Entity    string   `json:"entity"`
	Relations []string `json:"relations"`
}

// FactSentence renders a fact in the grammar's canonical sentence.
func FactSentence(f Fact) string {
	return "The " + f.Relation + " of " + f.Subject + " is " + f.Object + "."
}

// MissSentence renders the report of an executor that did not find a fact.
func MissSentence(relation, subject string) string {
	return "I could not find the " + relation + " of " + subject + "."
}

var (
	factPattern = regexp.MustCompile(`The ([a-z][a-z ]*?) of ([A-Z0-9][^.\n]*?) is ([^.\n]+?)\.`)
	// markdownLink matches [text](target): page extractors turn the links
	// of a page into these, often right inside a fact sentence.
	markdownLink = regexp.MustCompile(`\[([^\]\n]*)\]\([^)\s]*\)`)
)

// ParseFacts returns every fact sentence found in text, in order of
// appearance. It reads Markdown links as their text and tolerates
// surrounding Markdown, HTML remnants and other prose; text without facts
// yields nil.
func ParseFacts(text string) []Fact {
	text = markdownLink.ReplaceAllString(text, "$1")
	var facts []Fact
	for _, m := range factPattern.FindAllStringSubmatch(text, -1) {
		subject := strings.TrimSpace(m[2])
		// A subject that itself contains " of " means the regexp matched a
		// lazily shortened relation; the grammar forbids it, so skip it.
		if strings.Contains(subject, " of ") {
			continue
		}
		facts = append(facts, Fact{Subject: subject, Relation: m[1], Object: strings.TrimSpace(m[3])})
	}
	return facts
}

// QuestionText renders a chain as a question.
func QuestionText(c Chain) string {
	return "What is " + chainPhrase(c) + "?"
}

// SubtaskText renders a chain as a delegated subtask.
func SubtaskText(c Chain) string {
	return "Find " + chainPhrase(c) + "."
}

func chainPhrase(c Chain) string {
	var b strings.Builder
	for i := len(c.Relations) - 1; i >= 0; i-- {
		b.WriteString("the ")
		b.WriteString(c.Relations[i])
		b.WriteString(" of ")
	}
	b.WriteString(c.Entity)
	return b.String()
}

var (
	questionPattern = regexp.MustCompile(`What is (the [a-z][a-z ]*? of [^?\n]+?)\?`)
	subtaskPattern  = regexp.MustCompile(`Find (the [a-z][a-z ]*? of [^\n]+?)\.(?:\s|$)`)
)

// ParseQuestion finds the first question of the grammar in text and returns
// its chain; ok is false when text holds none.
func ParseQuestion(text string) (c Chain, ok bool) {
	m := questionPattern.FindStringSubmatch(text)
	if m == nil {
		return Chain{}, false
	}
	return parsePhrase(m[1])
}

// ParseSubtask finds the first subtask of the grammar in text and returns its
// chain; ok is false when text holds none.
func ParseSubtask(text string) (c Chain, ok bool) {
	m := subtaskPattern.FindStringSubmatch(text)
	if m == nil {
		return Chain{}, false
	}
	return parsePhrase(m[1])
}

// parsePhrase reads "the rN of the rN-1 of … the r1 of Entity".
func parsePhrase(p string) (Chain, bool) {
	parts := strings.Split(p, " of the ")
	last := parts[len(parts)-1]
	rel, entity, found := strings.Cut(last, " of ")
	if !found || entity == "" {
		return Chain{}, false
	}
	parts[0] = strings.TrimPrefix(parts[0], "the ")
	if len(parts) == 1 {
		rel = strings.TrimPrefix(rel, "the ")
	}
	rels := make([]string, 0, len(parts))
	rels = append(rels, rel)
	for i := len(parts) - 2; i >= 0; i-- {
		rels = append(rels, parts[i])
	}
	for _, r := range rels {
		if r == "" || strings.ContainsAny(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			return Chain{}, false
		}
	}
	return Chain{Entity: strings.TrimSpace(entity), Relations: rels}, true
}
