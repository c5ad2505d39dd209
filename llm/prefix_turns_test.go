package llm

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// idsJSON writes ids as a compact JSON array.
func idsJSON(v []int32) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(int(n))
	}
	return "[" + strings.Join(s, ",") + "]"
}

// vllmAnswer returns a vLLM chat answer with the given prompt ids,
// completion ids and their logprobs.
func vllmAnswer(prompt, completion []int32, logprobs []float64) string {
	ints := idsJSON
	entries := make([]string, len(logprobs))
	for i, lp := range logprobs {
		entries[i] = fmt.Sprintf(`{"token":"t","logprob":%s,"bytes":[],"top_logprobs":[]}`, strconv.FormatFloat(lp, 'g', -1, 64))
	}
	return `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},` +
		`"logprobs":{"content":[` + strings.Join(entries, ",") + `]},"finish_reason":"stop","stop_reason":null,"token_ids":` + ints(completion) + `}],` +
		fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d},`, len(prompt), len(completion), len(prompt)+len(completion)) +
		`"prompt_token_ids":` + ints(prompt) + `}`
}

// wireTurn decodes an answer carrying t's ids with p, as the vLLM dialect
// does, and returns the turn the client would record.
func wireTurn(tb interface{ Fatalf(string, ...any) }, p *PromptPrefix, t *Turn) *Turn {
	r, err := decodeChatPrefix([]byte(vllmAnswer(t.PromptIDs, t.CompletionIDs, t.Logprobs)), false, p, nil)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	got := &Turn{PromptIDs: r.resp.PromptTokenIDs, CompletionIDs: r.ch.TokenIDs, Logprobs: r.logprobs}
	if err := checkTokens(got); err != nil {
		tb.Fatalf("%v", err)
	}
	p.rememberTurn(r.promptText, got)
	return got
}

// genWireTrajectory is genTrajectory with a third kind of turn: one whose
// prompt repeats the previous prompt and a changed completion (a template
// that re-renders the answer), which drifts inside the ids the client
// placed after the previous prompt.
func genWireTrajectory(t *rapid.T) []*Turn {
	turns := genTrajectory(t)
	for i := 1; i < len(turns); i++ {
		prev := turns[i-1]
		if rapid.IntRange(0, 3).Draw(t, "rerender") == 0 {
			comp := slices.Clone(prev.CompletionIDs)
			comp[rapid.IntRange(0, len(comp)-1).Draw(t, "at")] += 1000
			tail := rapid.SliceOfN(rapid.Int32Range(0, 50), 0, 5).Draw(t, "tail")
			turns[i].PromptIDs = slices.Concat(prev.PromptIDs, comp, tail)
		}
	}
	return turns
}

// TestPromptPrefixTurnsProperty checks that turns decoded through one
// PromptPrefix carry the ids of the answers, that no later answer changes
// an earlier turn's ids, and that their sequences are those of the same
// turns in arrays of their own, sharing the client's array when the
// trajectory never drifted.
func TestPromptPrefixTurnsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		plain := genWireTrajectory(t)
		var p PromptPrefix
		wired := make([]*Turn, len(plain))
		for i, pt := range plain {
			wired[i] = wireTurn(t, &p, pt)
			if want := strings.TrimSuffix(idsJSON(pt.PromptIDs), "]"); !p.text.matches([]byte(want)) {
				t.Fatalf("after answer %d the remembered text is not %q", i, want)
			}
			for j := range i + 1 {
				if !slices.Equal(wired[j].PromptIDs, plain[j].PromptIDs) || !slices.Equal(wired[j].CompletionIDs, plain[j].CompletionIDs) {
					t.Fatalf("after answer %d, turn %d holds %v %v, want %v %v", i, j,
						wired[j].PromptIDs, wired[j].CompletionIDs, plain[j].PromptIDs, plain[j].CompletionIDs)
				}
			}
		}
		want, wantDrifts, err := Sequences(plain)
		if err != nil {
			t.Fatal(err)
		}
		got, gotDrifts, err := Sequences(wired)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotDrifts, wantDrifts) {
			t.Fatalf("sequences through the prefix differ:\n got %+v %v\nwant %+v %v", got, gotDrifts, want, wantDrifts)
		}
		last := wired[len(wired)-1]
		if seq := got[len(got)-1]; &seq.InputIDs[0] != &last.PromptIDs[0] {
			t.Errorf("the last sequence copied the ids the client placed in one array")
		}
	})
}

// TestPromptPrefixCompletionInPlace follows one trajectory: the completion
// goes right after its prompt, the next prompt's new ids after it, and a
// prompt that is exactly the previous prompt and completion adds nothing.
func TestPromptPrefixCompletionInPlace(t *testing.T) {
	var p PromptPrefix
	t1 := wireTurn(t, &p, &Turn{PromptIDs: []int32{1, 2, 3}, CompletionIDs: []int32{4, 5}, Logprobs: []float64{-1, -2}})
	t2 := wireTurn(t, &p, &Turn{PromptIDs: []int32{1, 2, 3, 4, 5, 6}, CompletionIDs: []int32{7}, Logprobs: []float64{-3}})
	if !p.text.matches([]byte("[1,2,3,4,5,6")) {
		t.Errorf("remembered text %+v: not the new prompt's", p.text)
	}
	t3 := wireTurn(t, &p, &Turn{PromptIDs: []int32{1, 2, 3, 4, 5, 6, 7}, CompletionIDs: []int32{8}, Logprobs: []float64{-4}})
	if &t1.PromptIDs[0] != &t2.PromptIDs[0] || &t2.PromptIDs[0] != &t3.PromptIDs[0] || &t1.CompletionIDs[0] != &t2.PromptIDs[3] || &t2.CompletionIDs[0] != &t3.PromptIDs[6] {
		t.Fatal("the turns do not share one array with each completion after its prompt")
	}
	for _, tr := range []*Turn{t1, t2, t3} {
		if cap(tr.PromptIDs) != len(tr.PromptIDs) || cap(tr.CompletionIDs) != len(tr.CompletionIDs) {
			t.Errorf("views not capped at their length: %v %v", tr.PromptIDs, tr.CompletionIDs)
		}
	}
	seqs, drifts, err := Sequences([]*Turn{t1, t2, t3})
	if err != nil || len(seqs) != 1 || len(drifts) != 0 {
		t.Fatalf("sequences %+v drifts %v err %v", seqs, drifts, err)
	}
	s := seqs[0]
	if !slices.Equal(s.InputIDs, []int32{1, 2, 3, 4, 5, 6, 7, 8}) || !slices.Equal(s.LossMask, []int8{0, 0, 0, 1, 1, 0, 1, 1}) ||
		!slices.Equal(s.Logprobs, []float64{0, 0, 0, -1, -2, 0, -3, -4}) {
		t.Errorf("sequence %+v", s)
	}
	if &s.InputIDs[0] != &t1.PromptIDs[0] {
		t.Error("the sequence copied the ids")
	}
	// A copied turn (its ids edited by the caller) is not trusted.
	edited := *t3
	edited.CompletionIDs = []int32{9}
	seqs, _, err = Sequences([]*Turn{t1, t2, &edited})
	if err != nil || !slices.Equal(seqs[0].InputIDs, []int32{1, 2, 3, 4, 5, 6, 7, 9}) {
		t.Errorf("edited turn: %v %v", seqs, err)
	}
}

// TestPromptPrefixTurnsThroughDialects runs one trajectory against the sim
// through each token-capturing dialect with a PromptPrefix and again
// without one: the turns carry the same ids either way, the prefixed turns
// share one array, and their sequence is the one built from copies,
// without copying the ids.
func TestPromptPrefixTurnsThroughDialects(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			s := mustSim(t, simConfig(dialect, 3), nil)
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
			w := mustWorld(t)
			run := func(p *PromptPrefix) []*Turn {
				msgs := []histMsg{{Role: "system", Content: "You are a research executor."}, {Role: "user", Content: w.Questions[0].Question}}
				var turns []*Turn
				for turn := range 4 {
					tr, err := c.Chat(context.Background(), Request{Messages: msgs, Tools: executorTools(), Prefix: p,
						Sampling: &Sampling{Seed: ptr(int64(turn)), MaxTokens: 512}})
					if err != nil {
						t.Fatal(err)
					}
					turns = append(turns, tr)
					msgs = append(msgs, tr.Message)
					if len(tr.ToolCalls) == 0 {
						msgs = append(msgs, histMsg{Role: "user", Content: "Go on."})
					}
					for _, call := range tr.ToolCalls {
						msgs = append(msgs, toolMsg(runTool(w, call), call.ID))
					}
				}
				return turns
			}
			var p PromptPrefix
			shared, plain := run(&p), run(nil)
			for i := range shared {
				if !slices.Equal(shared[i].PromptIDs, plain[i].PromptIDs) || !slices.Equal(shared[i].CompletionIDs, plain[i].CompletionIDs) {
					t.Fatalf("turn %d: ids differ with a prefix", i)
				}
			}
			for i := 1; i < len(shared); i++ {
				prev, cur := shared[i-1], shared[i]
				if &cur.PromptIDs[0] == &prev.PromptIDs[0] && &cur.PromptIDs[len(prev.PromptIDs)] != &prev.CompletionIDs[0] {
					t.Errorf("turn %d extends turn %d's array but not after its completion", i, i-1)
				}
			}
			got, gotDrifts, err := Sequences(shared)
			if err != nil {
				t.Fatal(err)
			}
			want, wantDrifts, err := Sequences(plain)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotDrifts, wantDrifts) {
				t.Fatalf("sequences differ with a prefix: %d vs %d sequences, drifts %v vs %v", len(got), len(want), gotDrifts, wantDrifts)
			}
			last := shared[len(shared)-1]
			if seq := got[len(got)-1]; &seq.InputIDs[0] != &last.PromptIDs[0] {
				t.Error("the last sequence copied the ids the client placed in one array")
			}
		})
	}
}

// FuzzPromptPrefixCompletion checks that after an answer whose completion
// was placed after its prompt, any next answer decodes as it does without
// a prefix, and leaves the earlier turn's ids as they were.
func FuzzPromptPrefixCompletion(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte{4, 5}, "[1,2,3,4,5,6]")
	f.Add([]byte{1, 2, 3}, []byte{4, 5}, "[1,2,3,4,5]")
	f.Add([]byte{1, 2, 3}, []byte{4, 5}, "[1,2,3,4,9,6]")
	f.Add([]byte{1, 2, 3}, []byte{4, 5}, "[1,2,3,4]")
	f.Add([]byte{1, 2, 3}, []byte{4, 5}, "[1,2,3, 4 ,5,6]")
	f.Add([]byte{10}, []byte{200}, "[10,200,-1]")
	f.Fuzz(func(t *testing.T, prevRaw, compRaw []byte, next string) {
		if len(prevRaw) == 0 || len(compRaw) == 0 {
			return
		}
		ids := func(raw []byte) []int32 {
			out := make([]int32, len(raw))
			for i, b := range raw {
				out[i] = int32(b)
			}
			return out
		}
		prompt, comp := ids(prevRaw), ids(compRaw)
		var p PromptPrefix
		first := wireTurn(t, &p, &Turn{PromptIDs: prompt, CompletionIDs: comp, Logprobs: make([]float64, len(comp))})
		v, s := withPromptIDs(next)
		sameDecode(t, v, &p)
		sameDecode(t, s, &p)
		if !slices.Equal(first.PromptIDs, prompt) || !slices.Equal(first.CompletionIDs, comp) {
			t.Fatalf("the first turn's ids became %v %v, want %v %v", first.PromptIDs, first.CompletionIDs, prompt, comp)
		}
	})
}

// TestPromptPrefixOneArrayAfterGrowth follows a trajectory whose prompts
// outgrow the array their ids are placed in, again and again: the earlier
// turns move to each new array, so the trajectory keeps one alive, with
// every turn's ids unchanged; a turn the prompt no longer repeats (drift)
// keeps its own.
func TestPromptPrefixOneArrayAfterGrowth(t *testing.T) {
	var (
		p     PromptPrefix
		turns []*Turn
		plain []*Turn
		seq   []int32
	)
	for i := range 12 {
		for range 50 << i % 700 {
			seq = append(seq, int32(len(seq)%997))
		}
		prompt := slices.Clone(seq)
		comp := []int32{int32(5000 + i), int32(6000 + i)}
		pt := &Turn{PromptIDs: prompt, CompletionIDs: comp, Logprobs: []float64{-1, -2}}
		plain = append(plain, pt)
		turns = append(turns, wireTurn(t, &p, pt))
		seq = append(seq, comp...)
	}
	last := turns[len(turns)-1]
	for i, tr := range turns {
		if !slices.Equal(tr.PromptIDs, plain[i].PromptIDs) || !slices.Equal(tr.CompletionIDs, plain[i].CompletionIDs) {
			t.Fatalf("turn %d holds other ids than the server sent", i)
		}
		if &tr.PromptIDs[0] != &last.PromptIDs[0] || tr.contiguous() == nil {
			t.Errorf("turn %d is not in the trajectory's last array", i)
		}
	}
	// Drift: the next prompt changes an early id, so it gets an array of
	// its own and the earlier turns stay where they are.
	drift := slices.Clone(seq)
	drift[1]++
	dt := wireTurn(t, &p, &Turn{PromptIDs: drift, CompletionIDs: []int32{1}, Logprobs: []float64{-1}})
	if &dt.PromptIDs[0] == &last.PromptIDs[0] || &turns[0].PromptIDs[0] != &last.PromptIDs[0] {
		t.Error("a drifted prompt moved the earlier turns or shares their array")
	}
	if !slices.Equal(turns[0].PromptIDs, plain[0].PromptIDs) || !slices.Equal(dt.PromptIDs, drift) {
		t.Error("ids changed across the drift")
	}
}

// TestPromptPrefixRelease checks that a released prefix holds nothing of
// the previous exchange, that the next answer decodes to the same turn, and
// that the earlier turns then move to the next turn's array.
func TestPromptPrefixRelease(t *testing.T) {
	var p PromptPrefix
	t1 := wireTurn(t, &p, &Turn{PromptIDs: []int32{1, 2, 3}, CompletionIDs: []int32{4, 5}, Logprobs: []float64{-1, -2}})
	p.Release()
	if p.text.n != 0 || p.buf != nil || p.msgsJSON != nil || p.sent != nil {
		t.Fatalf("released prefix still holds text %+v, ids %v, messages %q", p.text, p.buf, p.msgsJSON)
	}
	t2 := wireTurn(t, &p, &Turn{PromptIDs: []int32{1, 2, 3, 4, 5, 6}, CompletionIDs: []int32{7}, Logprobs: []float64{-3}})
	if !slices.Equal(t1.PromptIDs, []int32{1, 2, 3}) || !slices.Equal(t1.CompletionIDs, []int32{4, 5}) ||
		!slices.Equal(t2.PromptIDs, []int32{1, 2, 3, 4, 5, 6}) || !slices.Equal(t2.CompletionIDs, []int32{7}) {
		t.Fatalf("turns after a release: %v %v, %v %v", t1.PromptIDs, t1.CompletionIDs, t2.PromptIDs, t2.CompletionIDs)
	}
	if &t1.PromptIDs[0] != &t2.PromptIDs[0] {
		t.Error("the first turn did not move to the second turn's array")
	}
	var nilPrefix *PromptPrefix
	nilPrefix.Release()
}
