package score

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ExpertPrompt is the r_expert judge's prompt (M-GRPO's expert reward for
// executors): it rates, from 0 to 10, how well an executor's report carries
// out the subtask its planner delegated. The rating rewards a report that
// answers the subtask with specific, checkable facts and says plainly what
// it could not find; it penalises reports that drift off the task, pad, or
// assert facts without support. The farm divides the rating by 10.
const ExpertPrompt = `You are grading the work of a research assistant who was given one subtask by a lead researcher.

Subtask:
{task}

The assistant's report:
{report}

Rate from 0 to 10 how well the report carries out the subtask:
- 10: it answers exactly what was asked with specific facts, and says plainly what could not be found;
- 5: it is partly relevant or partly answers the subtask, or mixes in unsupported claims;
- 0: it is off-task, empty, or only restates the subtask.
Judge only the report against the subtask; do not reward length.

Reply with one short sentence of reasoning, then a last line of the form:
Score: N`

var expertScorePattern = regexp.MustCompile(`(?im)^\s*\**\s*score\s*\**\s*[:：]\s*\**\s*(\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*\**\s*$`)

// ExpertJudge rates executor reports with ExpertPrompt on a chat model.
type ExpertJudge struct {
	Model ChatModel
}

// Rate returns the report's score in [0, 1] and the judge's raw reply. A
// reply without a "Score: N" line, or with N outside 0–10, is an error
// wrapping ErrMalformedVerdict (the raw reply is still returned).
func (j ExpertJudge) Rate(ctx context.Context, subtask, report string) (float64, string, error) {
	prompt := strings.NewReplacer("{task}", subtask, "{report}", report).Replace(ExpertPrompt)
	raw, err := j.Model.Complete(ctx, "", prompt)
	if err != nil {
		return 0, "", fmt.Errorf("%w: expert judge: %w", ErrJudge, err)
	}
	v, err := ParseExpertScore(raw)
	return v, raw, err
}

// ParseExpertScore reads the last "Score: N" line (N from 0 to 10, "N/10"
// and Markdown bold accepted) of a judge reply and returns N/10.
func ParseExpertScore(raw string) (float64, error) {
	matches := expertScorePattern.FindAllStringSubmatch(stripThinking(raw), -1)
	if len(matches) == 0 {
		return 0, fmt.Errorf("%w: no \"Score: N\" line", ErrMalformedVerdict)
	}
	n, err := strconv.ParseFloat(matches[len(matches)-1][1], 64)
	if err != nil || n < 0 || n > 10 {
		return 0, fmt.Errorf("%w: score %q is not between 0 and 10", ErrMalformedVerdict, matches[len(matches)-1][1])
	}
	return n / 10, nil
}
