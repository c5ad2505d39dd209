package visit

import (
	"context"
	"errors"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// scriptedChat answers with replies in order and records prompt sizes.
type scriptedChat struct {
	replies []string
	errs    []error
	sizes   []int
}

func (s *scriptedChat) Chat(_ context.Context, req llm.Request) (*llm.Turn, error) {
	i := len(s.sizes)
	prompt := req.Messages[0].Content
	start := strings.Index(prompt, "## Web page content\n") + len("## Web page content\n")
	end := strings.Index(prompt, "\n\n## User goal")
	s.sizes = append(s.sizes, len([]rune(prompt[start:end])))
	if i < len(s.errs) && s.errs[i] != nil {
		return nil, s.errs[i]
	}
	return &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: s.replies[i]}}, nil
}

func TestExtractRetriesWithLessContent(t *testing.T) {
	page := strings.Repeat("a", 1000)
	chat := &scriptedChat{
		errs:    []error{errors.New("context length exceeded"), nil, nil},
		replies: []string{"", "not json at all", "```json\n{\"rational\":\"r\",\"evidence\":\"e\",\"summary\":\"s\"}\n```"},
	}
	ext, attempts, err := Extract(context.Background(), &LLMSummarizer{Client: chat}, "find x", page, ExtractPolicy{FinalChars: 300})
	if err != nil || attempts != 3 {
		t.Fatalf("Extract = %v after %d attempts", err, attempts)
	}
	if ext != (Extraction{Rational: "r", Evidence: "e", Summary: "s"}) {
		t.Errorf("extraction = %+v", ext)
	}
	if want := []int{1000, 700, 300}; len(chat.sizes) != 3 || chat.sizes[0] != want[0] || chat.sizes[1] != want[1] || chat.sizes[2] != want[2] {
		t.Errorf("content sizes = %v, want %v", chat.sizes, want)
	}
}

func TestExtractGivesUp(t *testing.T) {
	chat := &scriptedChat{replies: []string{"no", "no", "no"}}
	_, attempts, err := Extract(context.Background(), &LLMSummarizer{Client: chat}, "g", "content", ExtractPolicy{})
	if !errors.Is(err, ErrExtraction) || attempts != 3 {
		t.Fatalf("err = %v, attempts %d", err, attempts)
	}
}

func FuzzParseExtraction(f *testing.F) {
	for _, s := range []string{`{"rational":"a","evidence":"b","summary":"c"}`, "```json\n{}\n```", `{"evidence":[1,2]}`, `}{`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ext, err := ParseExtraction(s)
		if err == nil && ext.Evidence == "" && ext.Summary == "" {
			t.Fatal("accepted an extraction without evidence or summary")
		}
	})
}
