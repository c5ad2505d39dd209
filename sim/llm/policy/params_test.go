package policy

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParamsVectorRoundTrip(t *testing.T) {
	p := DefaultParams(DefaultSkills())
	v := p.Vector()
	if len(v) != len(p.Names()) || len(v) != p.Len() {
		t.Fatalf("vector of %d entries, %d names, Len %d", len(v), len(p.Names()), p.Len())
	}
	v[0] = 1.5
	q, err := p.WithVector(v)
	if err != nil {
		t.Fatal(err)
	}
	if q.At(0) != 1.5 || p.At(0) == 1.5 {
		t.Errorf("WithVector: new %v, old %v; want the new one changed only", q.At(0), p.At(0))
	}
	if _, err := p.WithVector(v[1:]); err == nil || !strings.Contains(err.Error(), "want") {
		t.Errorf("short vector: err %v", err)
	}
	v[2] = math.NaN()
	if _, err := p.WithVector(v); err == nil || !strings.Contains(err.Error(), ParamNames()[2]) {
		t.Errorf("NaN entry: err %v, want it to name %s", err, ParamNames()[2])
	}
}

func TestParamNamesStable(t *testing.T) {
	names := ParamNames()
	want := []string{"planner.guess.bias", "planner.guess.turn", "planner.guess.calls", "planner.retry.bias"}
	if !slices.Equal(names[:4], want) {
		t.Errorf("first names %v, want %v", names[:4], want)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("duplicate name %s", n)
		}
		seen[n] = true
	}
	if !seen["executor.pick.relevance"] || !seen["planner.delegate.cross.bias"] {
		t.Errorf("names %v miss pick.relevance or delegate.cross.bias", names)
	}
}

func TestDefaultParamsMatchSkills(t *testing.T) {
	s := DefaultSkills()
	p := DefaultParams(s)
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	checks := []struct {
		role Role
		kind Kind
		want float64
	}{
		{RolePlanner, KindGuess, s.Guess},
		{RolePlanner, KindRetry, s.Retry},
		{RoleExecutor, KindSnippet, s.SnippetShortcut},
		{RoleExecutor, KindPick, s.PickBest},
		{RoleExecutor, KindVisitTwo, s.VisitTwo},
		{RoleExecutor, KindMalformed, s.MalformedCall},
	}
	for _, c := range checks {
		if got := sig(p.Block(c.role, c.kind)[0]); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s.%s: P(yes) = %v, want %v", c.role, c.kind, got, c.want)
		}
	}
	d := p.Block(RolePlanner, KindDelegate)
	z := 1 + math.Exp(d[0]) + math.Exp(d[3])
	if got := math.Exp(d[3]) / z; math.Abs(got-s.CrossCheck/(s.DelegateHop+s.DelegateChain+s.CrossCheck)) > 1e-12 {
		t.Errorf("P(cross) = %v", got)
	}
	if b := DefaultParams(PerfectSkills()).Block(RoleExecutor, KindVisitTwo)[0]; b != -MaxBias {
		t.Errorf("VisitTwo 0 gives bias %v, want %v", b, -MaxBias)
	}
}

func TestParamsFile(t *testing.T) {
	p := DefaultParams(DefaultSkills())
	path := filepath.Join(t.TempDir(), "p.json")
	if err := p.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	q, err := ReadParams(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Vector(), q.Vector()) {
		t.Errorf("read back %v, want %v", q.Vector(), p.Vector())
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	tests := []struct {
		name, text, want string
	}{
		{"wrong format", strings.Replace(good, ParamsFormat, "other/v1", 1), `format "other/v1"`},
		{"short vector", strings.Replace(good, `"pick": [`, `"pick": [0.5, `, 1), "roles.executor.pick has 4 entries, want 3"},
		{"unknown decision", strings.Replace(good, `"guess":`, `"guesses":`, 1), "roles.planner.guess is missing"},
		{"not JSON", "{", "params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(bad, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadParams(bad)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func FuzzParseParams(f *testing.F) {
	var b bytes.Buffer
	if err := DefaultParams(DefaultSkills()).Write(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"format":"mgrpo-sim-policy-params/v1","roles":{}}`))
	f.Add([]byte(`{"format":"mgrpo-sim-policy-params/v1","roles":{"planner":{"guess":[1e400]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseParams(data)
		if err != nil {
			return
		}
		js, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParseParams(js)
		if err != nil || !slices.Equal(p.Vector(), q.Vector()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestWithRole(t *testing.T) {
	base := DefaultParams(DefaultSkills())
	v := base.Vector()
	for i := range v {
		v[i] += 1
	}
	moved, _ := ParamsFromVector(v)
	got := base.WithRole(RolePlanner, moved)
	for i := range v {
		want := base.At(i)
		if RoleOf(i) == RolePlanner {
			want = moved.At(i)
		}
		if got.At(i) != want {
			t.Fatalf("entry %d (%s): %v, want %v", i, ParamNames()[i], got.At(i), want)
		}
	}
}
