package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Result is one line of results.jsonl: the outcome of one question in one run.
//
// JSON keys (all lowercase snake case):
//
//	id, benchmark, run, prediction, correct, method, judge_output, judge_error, turns, delegations,
//	tool_calls, prompt_tokens, completion_tokens, latency_seconds, error, level, type, difficulty,
//	lang, domain, hash
//
// Outcomes are exclusive: a non-empty Error means the agent failed (no prediction was scored); else a
// non-empty JudgeError means the judge gave no usable verdict; else Correct is the verdict. Errors and
// judge errors are counted separately from wrong answers. Results never carry the question or the
// reference answer: Hash identifies the text (see Item.Hash).
type Result struct {
	ID        string `json:"id"`
	Benchmark string `json:"benchmark,omitempty"`
	// Run numbers the repeated runs of an eval, from 0.
	Run        int    `json:"run"`
	Prediction string `json:"prediction"`
	Correct    bool   `json:"correct"`
	// Method is how the verdict was reached: "exact" or "judge".
	Method string `json:"method,omitempty"`
	// JudgeOutput keeps the raw reply of every judge call made for this result, in call order.
	JudgeOutput []string `json:"judge_output,omitempty"`
	JudgeError  string   `json:"judge_error,omitempty"`
	Turns       int      `json:"turns"`
	// Delegations counts the planner's delegations to executors.
	Delegations      int     `json:"delegations"`
	ToolCalls        int     `json:"tool_calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	LatencySeconds   float64 `json:"latency_seconds"`
	Error            string  `json:"error,omitempty"`
	Level            string  `json:"level,omitempty"`
	Type             string  `json:"type,omitempty"`
	Difficulty       string  `json:"difficulty,omitempty"`
	Lang             string  `json:"lang,omitempty"`
	Domain           string  `json:"domain,omitempty"`
	Hash             string  `json:"hash,omitempty"`
}

// Outcome classifies a result.
type Outcome int

// Outcomes, exclusive, in order of precedence.
const (
	OutcomeCorrect Outcome = iota
	OutcomeWrong
	OutcomeError
	OutcomeJudgeError
)

// Outcome returns the result's class: an agent error first, then a judge error, then the verdict.
func (r Result) Outcome() Outcome {
	switch {
	case r.Error != "":
		return OutcomeError
	case r.JudgeError != "":
		return OutcomeJudgeError
	case r.Correct:
		return OutcomeCorrect
	default:
		return OutcomeWrong
	}
}

// ResultFor returns a Result with the item's identity and category fields filled in.
func ResultFor(it Item, run int) Result {
	return Result{
		ID: it.ID, Benchmark: it.Benchmark, Run: run,
		Level: it.Level, Type: it.Type, Difficulty: it.Difficulty, Lang: it.Lang, Domain: it.Domain,
		Hash: it.Hash(),
	}
}

// ReadResults parses results.jsonl from r. Blank lines are skipped; a malformed line is an error
// naming name and the line number.
func ReadResults(r io.Reader, name string) ([]Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	var out []Result
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(trimSpace(b)) == 0 {
			continue
		}
		var res Result
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if res.ID == "" {
			return nil, fmt.Errorf("%s:%d: missing id", name, line)
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// ReadResultsFile reads a results.jsonl file.
func ReadResultsFile(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	return ReadResults(f, path)
}

// WriteResult appends one result as a JSON line to w.
func WriteResult(w io.Writer, r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result %s: %w", r.ID, err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}
