package visit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Extraction is a summarizer's goal-directed reading of a page.
type Extraction struct {
	// Rational says where in the page the goal is addressed (the field
	// keeps the spelling deep-research prompts use).
	Rational string `json:"rational"`
	// Evidence quotes or closely paraphrases the relevant passages.
	Evidence string `json:"evidence"`
	// Summary answers the goal from the evidence.
	Summary string `json:"summary"`
}

// Summarizer reads page content in the light of a goal.
type Summarizer interface {
	// Summarize returns the extraction for goal from content. An error
	// (transport, or an answer that is not the JSON object) lets the caller
	// retry with less content.
	Summarize(ctx context.Context, goal, content string) (Extraction, error)
}

// ExtractPolicy sets how much content each summarizer attempt gets.
type ExtractPolicy struct {
	// MaxChars caps the content of the first attempt; 0 means 95000.
	MaxChars int
	// RetryFraction is the share of the first attempt's content kept on
	// the second; 0 means 0.7.
	RetryFraction float64
	// FinalChars is the content of the last attempt; 0 means 25000.
	FinalChars int
}

// ErrExtraction is returned (wrapping the last failure) when every
// summarizer attempt failed; callers fall back to the truncated page.
var ErrExtraction = errors.New("goal-directed extraction failed")

// Extract asks s for a goal-directed extraction of content: first with
// content cut to MaxChars, then, on failure, to RetryFraction of that, then
// to FinalChars. It returns the extraction and the number of attempts, or
// ErrExtraction wrapping the last failure. A cancelled ctx ends it at once.
func Extract(ctx context.Context, s Summarizer, goal, content string, p ExtractPolicy) (Extraction, int, error) {
	if p.MaxChars <= 0 {
		p.MaxChars = 95000
	}
	if p.RetryFraction <= 0 || p.RetryFraction >= 1 {
		p.RetryFraction = 0.7
	}
	if p.FinalChars <= 0 {
		p.FinalChars = 25000
	}
	runes := []rune(content)
	first := min(len(runes), p.MaxChars)
	sizes := []int{first, int(float64(first) * p.RetryFraction), min(first, p.FinalChars)}
	var last error
	for i, n := range sizes {
		if err := ctx.Err(); err != nil {
			return Extraction{}, i, err
		}
		ext, err := s.Summarize(ctx, goal, string(runes[:n]))
		if err == nil && strings.TrimSpace(ext.Summary+ext.Evidence) != "" {
			return ext, i + 1, nil
		}
		if err == nil {
			err = errors.New("empty extraction")
		}
		last = err
	}
	return Extraction{}, len(sizes), fmt.Errorf("%w: %w", ErrExtraction, last)
}

// ParseExtraction reads the JSON object {rational, evidence, summary} from a
// model's answer, tolerating a Markdown code fence and text around the
// object.
func ParseExtraction(answer string) (Extraction, error) {
	s := strings.TrimSpace(answer)
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j <= i {
		return Extraction{}, errors.New("answer holds no JSON object")
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s[i:j+1]), &raw); err != nil {
		return Extraction{}, fmt.Errorf("answer is not JSON: %w", err)
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			switch v := raw[k].(type) {
			case string:
				return v
			case nil:
			default:
				b, _ := json.Marshal(v)
				return string(b)
			}
		}
		return ""
	}
	ext := Extraction{Rational: str("rational", "rationale"), Evidence: str("evidence"), Summary: str("summary")}
	if ext.Evidence == "" && ext.Summary == "" {
		return Extraction{}, errors.New("answer lacks evidence and summary")
	}
	return ext, nil
}

// Format renders an extraction for the model.
func (e Extraction) Format(url, goal string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The useful information in %s for the goal %q:\n\n", url, goal)
	if e.Evidence != "" {
		fmt.Fprintf(&b, "Evidence in page:\n%s\n\n", strings.TrimSpace(e.Evidence))
	}
	if e.Summary != "" {
		fmt.Fprintf(&b, "Summary:\n%s\n", strings.TrimSpace(e.Summary))
	}
	return b.String()
}
