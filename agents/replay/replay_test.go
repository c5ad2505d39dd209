package replay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// memKV is a KV in memory.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMemKV() *memKV { return &memKV{m: map[string][]byte{}} }

func (k *memKV) Get(_ context.Context, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok, nil
}

func (k *memKV) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), value...)
	return nil
}

// fakeModel answers with a turn naming the request's last message.
type fakeModel struct{ calls int }

func (f *fakeModel) Chat(_ context.Context, req llm.Request) (*llm.Turn, error) {
	f.calls++
	last := req.Messages[len(req.Messages)-1].Content
	if last == "fail" {
		return nil, errors.New("engine down")
	}
	return &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: "re: " + last},
		PromptIDs: []int32{1, 2, 3}, CompletionIDs: []int32{4, 5}, Logprobs: []float64{-0.5, -0.25}, FinishReason: "stop"}, nil
}

type fakeTools struct{}

func (fakeTools) Specs() []tools.Spec { return []tools.Spec{{Name: "search"}} }
func (fakeTools) Call(_ context.Context, name string, args json.RawMessage) tools.Observation {
	return tools.Observation{Text: name + " saw " + string(args), Meta: tools.Meta{Tool: name, Requests: 1}}
}

func request(traj string, seed int64, msgs ...string) llm.Request {
	req := llm.Request{TrajectoryKey: traj, Sampling: &llm.Sampling{Seed: &seed}}
	req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: "system", Content: "be exact"})
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: role, Content: m})
	}
	return req
}

func TestRecordThenPlayGivesTheSameAnswers(t *testing.T) {
	ctx := context.Background()
	kv := newMemKV()
	rec := NewRecorder(kv, nil)
	m := rec.Model("planner", &fakeModel{})
	want, err := m.Chat(ctx, request("r/1/q/0/planner", 7, "question"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Chat(ctx, request("r/1/q/1/planner", 8, "fail")); err == nil {
		t.Fatal("the failing call did not fail")
	}
	obs := rec.Toolbox(fakeTools{}).Call(ctx, "search", json.RawMessage(`{"q": "x"}`))
	if s := rec.Stats(); s.Calls != 2 || s.ToolCalls != 1 || s.Bytes == 0 {
		t.Errorf("stats %+v", s)
	}
	if ok, _ := HasRecording(ctx, kv); !ok {
		t.Error("no recording marker")
	}

	p := NewPlayer(kv)
	pm := p.Model("planner")
	got, err := pm.Chat(ctx, request("r/1/q/0/planner", 7, "question"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("played turn %s, recorded %s", b, a)
	}
	if _, err := pm.Chat(ctx, request("r/1/q/1/planner", 8, "fail")); err == nil || err.Error() != "engine down" {
		t.Errorf("played failure %v, want the recorded error", err)
	}
	// Same arguments, other spacing: the same observation.
	if o := p.Toolbox(fakeTools{}).Call(ctx, "search", json.RawMessage(`{"q":"x"}`)); o.Text != obs.Text {
		t.Errorf("played observation %q, recorded %q", o.Text, obs.Text)
	}
	// Another role, another seed (turn), another prompt: misses.
	if _, err := p.Model("executor").Chat(ctx, request("r/1/q/0/planner", 7, "question")); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("another role: err %v", err)
	}
	if _, err := pm.Chat(ctx, request("r/1/q/0/planner", 7, "question, rephrased")); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("another prompt: err %v", err)
	}
	misses := p.Misses()
	if len(misses) != 2 {
		t.Fatalf("misses %+v, want 2", misses)
	}
	last := misses[1]
	if last.Role != "planner" || last.Trajectory != "r/1/q/0/planner" || last.Turn != 0 {
		t.Errorf("miss %+v", last)
	}
	if !strings.Contains(last.Diff, `-       "content": "question"`) || !strings.Contains(last.Diff, `+       "content": "question, rephrased"`) {
		t.Errorf("diff:\n%s", last.Diff)
	}
}

func TestDiffShowsOnlyTheChangeWithContext(t *testing.T) {
	a := []byte(`{"a":1,"b":[1,2,3,4,5,6,7,8],"c":"x"}`)
	b := []byte(`{"a":1,"b":[1,2,3,4,9,6,7,8],"c":"x"}`)
	d := Diff(a, b)
	if !strings.Contains(d, "-     5,\n+     9,") {
		t.Errorf("diff:\n%s", d)
	}
	if strings.Count(d, "\n") > 9 {
		t.Errorf("diff has more than the change and its context:\n%s", d)
	}
	if d := Diff(nil, b); !strings.HasPrefix(d, "(no request was recorded") {
		t.Errorf("diff without a recorded request:\n%s", d)
	}
}

// BenchmarkRecordChat measures what recording adds to one model call of
// an 8 KB conversation with a 200-token completion (the model itself
// answers at once): encoding the request and the turn, and two writes to
// an in-memory store.
func BenchmarkRecordChat(b *testing.B) {
	ctx := context.Background()
	long := strings.Repeat("The fact sought is on this page. ", 250)
	turn := &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: strings.Repeat("word ", 200)},
		PromptIDs: make([]int32, 2000), CompletionIDs: make([]int32, 200), Logprobs: make([]float64, 200), FinishReason: "stop"}
	m := constModel{turn}
	req := request("r/1/q/0/executor/0", 3, long, "ok", "go on")
	for _, rec := range []bool{false, true} {
		name := "plain"
		var model interface {
			Chat(context.Context, llm.Request) (*llm.Turn, error)
		} = m
		if rec {
			name = "recorded"
			model = NewRecorder(newMemKV(), nil).Model("executor", m)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := model.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type constModel struct{ t *llm.Turn }

func (c constModel) Chat(context.Context, llm.Request) (*llm.Turn, error) { return c.t, nil }

// TestTextAtNamesThePairAndDiffsTheRequest: a judge answer recorded on
// behalf of a pair is played back; a changed prompt misses, naming the
// pair, with a diff against the prompt recorded for it.
func TestTextAtNamesThePairAndDiffsTheRequest(t *testing.T) {
	ctx := context.Background()
	kv := newMemKV()
	rec := NewRecorder(kv, nil)
	if _, err := rec.TextAt(ctx, "judge", "eval/q1/0", []string{"m", "sys", "Is Paris right?"}, func() (string, error) { return "Correct", nil }); err != nil {
		t.Fatal(err)
	}
	p := NewPlayer(kv)
	if got, err := p.TextAt(ctx, "judge", "eval/q1/0", []string{"m", "sys", "Is Paris right?"}); err != nil || got != "Correct" {
		t.Fatalf("played %q, %v; want the recorded answer", got, err)
	}
	if _, err := p.TextAt(ctx, "judge", "eval/q1/0", []string{"m", "sys", "Is Lyon right?"}); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("changed prompt: %v, want ErrNotRecorded", err)
	}
	ms := p.Misses()
	if len(ms) != 1 || ms[0].Role != "judge" || ms[0].Trajectory != "eval/q1/0" ||
		!strings.Contains(ms[0].Diff, `-   "Is Paris right?"`) || !strings.Contains(ms[0].Diff, `+   "Is Lyon right?"`) {
		t.Errorf("misses %+v; want the pair named and the prompt diffed", ms)
	}
}
