package policy

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/mgrpo/mgrpo/sim/web"
)

// The simulated model also plays the LLM judges the project sends it, so a
// run on the simulated world can exercise its judge paths offline. It
// recognises them by their layout:
//
//   - equivalence judges (WebThinker/Tongyi): "Labeled Answer: …" and
//     "Predicted Answer: …"; it replies "Correct" or "Incorrect";
//   - the xbench judge: "[正确答案]: …" and "[回答]:…"; it replies with
//     "最终答案", "解释" and "结论: 正确|错误" lines;
//   - the expert judge of executor reports: "Subtask:" and "The assistant's
//     report:" blocks; it replies with a sentence and "Score: N" (0–10).
//
// Answers are compared after lowercasing and dropping whitespace and
// punctuation; the expert score reads the report's fact sentences against
// the subtask's chain.
var (
	equivalencePattern = regexp.MustCompile(`(?s)Labeled Answer: (.*?)\n\nPredicted Answer: (.*?)\n\n`)
	xbenchPattern      = regexp.MustCompile(`(?s)\[正确答案\]: (.*?)\n\n\[回答\]:(.*?)\n\n`)
	expertPattern      = regexp.MustCompile(`(?s)Subtask:\n(.*?)\n\nThe assistant's report:\n(.*?)\n\nRate from 0 to 10`)
)

// judge returns the judge's reply when the conversation's prompt is one of
// the judge prompts; ok is false otherwise.
func (t turn) judge() (out Output, ok bool) {
	prompt := t.conv.task
	if m := equivalencePattern.FindStringSubmatch(prompt); m != nil {
		if sameAnswer(m[1], m[2]) {
			return Output{Content: "Correct"}, true
		}
		return Output{Content: "Incorrect"}, true
	}
	if m := xbenchPattern.FindStringSubmatch(prompt); m != nil {
		verdict, why := "错误", "最终答案与正确答案不一致。"
		if sameAnswer(m[1], m[2]) {
			verdict, why = "正确", "最终答案与正确答案一致。"
		}
		return Output{Content: fmt.Sprintf("最终答案: %s\n解释: %s\n结论: %s", strings.TrimSpace(m[2]), why, verdict)}, true
	}
	if m := expertPattern.FindStringSubmatch(prompt); m != nil {
		score, why := expertScore(m[1], m[2])
		return Output{Content: fmt.Sprintf("%s\nScore: %d", why, score)}, true
	}
	return Output{}, false
}

// sameAnswer compares two answers ignoring case, whitespace and
// punctuation.
func sameAnswer(a, b string) bool {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) || unicode.IsPunct(r) {
				return -1
			}
			return unicode.ToLower(r)
		}, s)
	}
	na := norm(a)
	return na != "" && na == norm(b)
}

// expertScore rates a report against its subtask: the subtask's first hop
// answered about the exact entity scores high (all hops: 10), a fact about
// a near-namesake or another subject middling, an honest miss low, and a
// report with no facts lowest.
func expertScore(subtask, report string) (int, string) {
	chain, ok := web.ParseSubtask(subtask)
	if !ok {
		chain, ok = web.ParseQuestion(subtask)
	}
	facts := web.ParseFacts(report)
	if !ok {
		if len(facts) > 0 {
			return 5, "The subtask is unclear, but the report states specific facts."
		}
		return 2, "The subtask is unclear and the report states no facts."
	}
	entity, hops := chain.Entity, 0
	for _, rel := range chain.Relations {
		found := false
		for _, f := range facts {
			if f.Subject == entity && f.Relation == rel {
				entity, found = f.Object, true
				break
			}
		}
		if !found {
			break
		}
		hops++
	}
	switch {
	case hops == len(chain.Relations):
		return 10, "The report answers the subtask exactly with a specific fact."
	case hops > 0:
		return 7, "The report answers part of the subtask with specific facts."
	case len(facts) > 0:
		return 4, "The report states facts, but not the ones the subtask asks for."
	case strings.Contains(report, "could not find"):
		return 3, "The report finds nothing but says so plainly."
	default:
		return 1, "The report states no facts."
	}
}
