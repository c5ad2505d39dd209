package score

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseExpertScore(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    float64
		wantErr bool
	}{
		{"plain", "Good and specific.\nScore: 8", 0.8, false},
		{"out of ten, bold", "Fine.\n**Score:** 7/10", 0.7, false},
		{"decimal", "Score: 9.5", 0.95, false},
		{"full-width colon", "理由。\nScore：10", 1, false},
		{"last line wins", "Score: 2\nOn reflection.\nScore: 6", 0.6, false},
		{"thinking stripped", "<think>Score: 1</think>\nScore: 4", 0.4, false},
		{"missing", "It is good.", 0, true},
		{"out of range", "Score: 11", 0, true},
		{"negative", "Score: -1", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseExpertScore(tt.raw)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseExpertScore(%q) = %v, %v; want %v, error %v", tt.raw, got, err, tt.want, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrMalformedVerdict) {
				t.Errorf("error %v does not wrap ErrMalformedVerdict", err)
			}
		})
	}
}

type recordingModel struct{ prompt, reply string }

func (m *recordingModel) Complete(_ context.Context, _, user string) (string, error) {
	m.prompt = user
	return m.reply, nil
}

func TestExpertJudgeRate(t *testing.T) {
	m := &recordingModel{reply: "Answers the subtask.\nScore: 9"}
	got, raw, err := ExpertJudge{Model: m}.Rate(context.Background(), "Find the founder of X.", "The founder of X is Y.")
	if err != nil || got != 0.9 || raw != m.reply {
		t.Fatalf("Rate = %v, %q, %v", got, raw, err)
	}
	if !strings.Contains(m.prompt, "Subtask:\nFind the founder of X.") || !strings.Contains(m.prompt, "report:\nThe founder of X is Y.") {
		t.Errorf("prompt does not carry the subtask and report:\n%s", m.prompt)
	}
}
