package score

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// stubModel replies from a script, one reply per call, and records the prompts it saw.
type stubModel struct {
	mu      sync.Mutex
	replies []string
	errs    []error
	prompts []string
}

func (s *stubModel) Complete(_ context.Context, _ string, user string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.prompts)
	s.prompts = append(s.prompts, user)
	var err error
	if i < len(s.errs) {
		err = s.errs[i]
	}
	if err != nil {
		return "", err
	}
	if i < len(s.replies) {
		return s.replies[i], nil
	}
	return "", errors.New("script exhausted")
}

func TestJudgeKeepsEveryRawReply(t *testing.T) {
	m := &stubModel{replies: []string{"Maybe?", "Correct"}}
	j := NewCorrectIncorrectJudge(m)
	j.Attempts = 2
	v, err := j.Score(context.Background(), goldenCase)
	if err != nil {
		t.Fatalf("Score: %v", err)
	}
	if !v.Correct || v.Method != MethodJudge {
		t.Errorf("verdict = %+v, want correct by judge", v)
	}
	if got := strings.Join(v.JudgeOutput, "|"); got != "Maybe?|Correct" {
		t.Errorf("JudgeOutput = %q, want both replies", got)
	}
	if m.prompts[0] != RenderPrompt(PromptWebThinker, goldenCase) {
		t.Errorf("judge sent an unexpected prompt:\n%s", m.prompts[0])
	}
}

func TestJudgeMalformedIsJudgeError(t *testing.T) {
	m := &stubModel{replies: []string{"I think so"}}
	v, err := NewCorrectIncorrectJudge(m).Score(context.Background(), goldenCase)
	if !errors.Is(err, ErrJudge) || !errors.Is(err, ErrMalformedVerdict) {
		t.Fatalf("error = %v, want a malformed-verdict judge error", err)
	}
	if len(v.JudgeOutput) != 1 || v.JudgeOutput[0] != "I think so" {
		t.Errorf("raw output not kept: %q", v.JudgeOutput)
	}
}

func TestJudgeCallFailureIsJudgeError(t *testing.T) {
	m := &stubModel{errs: []error{errors.New("503")}}
	_, err := NewCorrectIncorrectJudge(m).Score(context.Background(), goldenCase)
	if !errors.Is(err, ErrJudge) {
		t.Fatalf("error = %v, want ErrJudge", err)
	}
}

func TestJudgeCancelledIsNotJudgeError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &stubModel{errs: []error{context.Canceled}}
	_, err := NewCorrectIncorrectJudge(m).Score(ctx, goldenCase)
	if errors.Is(err, ErrJudge) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled only", err)
	}
}

func TestCascadeSkipsJudgeOnExactMatch(t *testing.T) {
	m := &stubModel{replies: []string{"Correct"}}
	s := Cascade(GAIAExact, NewCorrectIncorrectJudge(m))
	v, err := s.Score(context.Background(), Case{Answer: "Paris", Prediction: "paris"})
	if err != nil || !v.Correct || v.Method != MethodExact || len(m.prompts) != 0 {
		t.Fatalf("exact step: %+v, %v, %d judge calls", v, err, len(m.prompts))
	}
	v, err = s.Score(context.Background(), Case{Answer: "Paris", Prediction: "It is Paris, France's capital"})
	if err != nil || !v.Correct || v.Method != MethodJudge || len(m.prompts) != 1 {
		t.Fatalf("judge step: %+v, %v, %d judge calls", v, err, len(m.prompts))
	}
}

func TestXBenchExactFirst(t *testing.T) {
	tests := []struct {
		pred, want string
	}{
		{"推理过程……\n最终答案: 42", "42"},
		{"最终答案：北京", "北京"},
		{"最终答案:a:b", "a"},
		{"  42 ", "42"},
	}
	for _, tc := range tests {
		if got := ExtractXBenchAnswer(tc.pred); got != tc.want {
			t.Errorf("ExtractXBenchAnswer(%q) = %q, want %q", tc.pred, got, tc.want)
		}
	}
	m := &stubModel{replies: []string{"最终答案: 四十二\n解释: 一致\n结论: 正确"}}
	s := XBench(m)
	v, err := s.Score(context.Background(), Case{Answer: "42", Prediction: "最终答案: 42"})
	if err != nil || !v.Correct || v.Method != MethodExact || len(m.prompts) != 0 {
		t.Fatalf("exact: %+v, %v", v, err)
	}
	v, err = s.Score(context.Background(), Case{Answer: "42", Prediction: "四十二"})
	if err != nil || !v.Correct || v.Method != MethodJudge || v.Extracted != "四十二" {
		t.Fatalf("judge: %+v, %v", v, err)
	}
}

func TestForBenchmark(t *testing.T) {
	m := &stubModel{}
	for _, tc := range []struct {
		bench, method string
		model         ChatModel
		wantErr       bool
	}{
		{"gaia", "", nil, false},
		{"gaia", "judge", nil, true},
		{"gaia", "judge", m, false},
		{"webwalkerqa", "auto", nil, true},
		{"webwalkerqa", "auto", m, false},
		{"xbench", "auto", m, false},
		{"xbench", "exact", nil, false},
		{"jsonl", "", nil, false},
		{"hle", "", m, true},
		{"gaia", "vibes", m, true},
	} {
		_, err := ForBenchmark(tc.bench, tc.method, tc.model)
		if (err != nil) != tc.wantErr {
			t.Errorf("ForBenchmark(%q, %q, model=%v) error = %v, want error %v", tc.bench, tc.method, tc.model != nil, err, tc.wantErr)
		}
	}
}
