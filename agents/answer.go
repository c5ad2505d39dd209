package agents

import (
	"fmt"
	"regexp"
	"strings"
)

var answerPattern = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)

// checkAnswer extracts the answer of a planner's or single agent's final
// message and records a format error unless it holds exactly one
// <answer>…</answer> block. A trajectory that already failed keeps its
// error and gets no answer check.
func checkAnswer(t *Trajectory) {
	if t.Error != "" || len(t.FormatErrors) > 0 && t.Final == "" {
		return
	}
	blocks := answerPattern.FindAllStringSubmatch(t.Final, -1)
	switch len(blocks) {
	case 1:
		t.Answer = strings.TrimSpace(blocks[0][1])
		if t.Answer == "" {
			t.formatError("the <answer> block is empty")
		}
	case 0:
		t.formatError("the final message has no <answer>…</answer> block")
	default:
		t.formatError(fmt.Sprintf("the final message has %d <answer> blocks, want exactly one", len(blocks)))
		t.Answer = strings.TrimSpace(blocks[len(blocks)-1][1])
	}
}

// checkReport records a format error unless an executor ended with a
// non-empty report.
func checkReport(t *Trajectory) {
	if t.Error != "" || len(t.FormatErrors) > 0 && t.Final == "" {
		return
	}
	if t.Final == "" {
		t.formatError("the executor ended without a report")
	}
}

// settle computes FormatOK once the trajectory has ended.
func settle(t *Trajectory) {
	t.FormatOK = t.Error == "" && len(t.FormatErrors) == 0
}
