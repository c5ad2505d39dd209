package policy

import (
	"fmt"
	"strings"

	"github.com/mgrpo/mgrpo/sim/web"
)

// answerOnly is the turn of a model offered no tools: it answers from the
// facts the conversation already holds (the question's own context, tool
// results, later user messages), or says it does not know.
func (t turn) answerOnly() Output {
	chain, ok := taskChain(t.conv.task, true)
	if !ok {
		return Output{
			Reasoning: "There is no question here I know how to answer.",
			Content:   "I do not know.",
		}
	}
	facts := t.conv.reportFacts()
	for _, f := range web.ParseFacts(t.conv.task) {
		facts = append(facts, evidence{fact: f, fresh: true})
	}
	r := &resolver{ch: t.ch, conv: t.conv, snippet: trusted, cut: ruledOut}
	res := r.resolve(chain, facts)
	if !res.done {
		return Output{
			Reasoning: fmt.Sprintf("I need %s. %sI have no way to find the %s of %s.",
				phrase(chain), knownText(res), res.next(chain), res.current),
			Content: "I do not know.",
		}
	}
	reason := fmt.Sprintf("I need %s. %sSo the answer is %s.", phrase(chain), knownText(res), res.current)
	if t.conv.answerTag {
		return Output{Reasoning: reason, Content: t.answer("", res.current, true)}
	}
	return Output{Reasoning: reason, Content: fmt.Sprintf("%s is %s.", capitalizeFirst(phrase(chain)), res.current)}
}

func capitalizeFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
