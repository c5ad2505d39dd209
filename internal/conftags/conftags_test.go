package conftags

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

type level struct{ n int }

type endpoint struct {
	URLs    []string `yaml:"urls" flag:"url,split" doc:"base {{URL}}s"`
	Dialect string   `yaml:"dialect" roleflag:"dialect" doc:"vllm or sglang"`
	Level   *level   `yaml:"level" flag:"level" doc:"a pointer-valued field"`
}

type config struct {
	Size     int                 `yaml:"size" category:"shape" flag:"size" scope:"farm" doc:"queries per step ({{B}})"`
	Wait     yamlstrict.Duration `yaml:"wait" flag:"wait" doc:"how long"`
	Hosts    []string            `yaml:"hosts" flag:"host,append" doc:"hosts"`
	Clip     float64             `yaml:"clip" flag:"clip" zero:"0.2" doc:"clip"`
	Planner  endpoint            `yaml:"planner" category:"endpoints" flag:"planner" roleflags:"true" doc:"planner"`
	Executor endpoint            `yaml:"executor" category:"endpoints" flag:"executor" roleflags:"true" doc:"executor"`
	Hidden   endpoint            `yaml:"hidden" flag:"-" doc:"no flags"`
	Notes    string              `yaml:"notes" doc:"{reg}"`
}

func testSchema() Schema {
	return Schema{Default: config{Size: 8, Wait: yamlstrict.Duration{Duration: time.Minute}, Planner: endpoint{Dialect: "vllm"}, Executor: endpoint{Dialect: "vllm"}},
		Doc: strings.NewReplacer("{reg}", "a, b").Replace, Scope: "agent", Leaves: []reflect.Type{reflect.TypeFor[yamlstrict.Duration]()}, IsRole: func(k string) bool { return k == "planner" || k == "executor" },
		Categories: []Category{{Key: "shape", Title: "1. shape"}, {Key: "endpoints", Title: "2. endpoints"}}}
}

// TestFlagsFromTags: names, keys, scopes, categories, defaults and usage
// come from the tags; a role flag sets every role's key.
func TestFlagsFromTags(t *testing.T) {
	byName := map[string]FlagSpec{}
	for _, f := range testSchema().Flags("agent", "farm") {
		byName[f.Name] = f
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range byName {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"clip", "dialect", "executor-level", "executor-url", "host", "planner-level", "planner-url", "size", "wait"}) {
		t.Errorf("flags %v", got)
	}
	if f := byName["size"]; f.Scope != "farm" || f.Category != "1. shape" || f.Default != 8 || f.Usage != "queries per step (`B`)" {
		t.Errorf("--size %+v", f)
	}
	if f := byName["dialect"]; !slices.Equal(f.Keys, []string{"planner.dialect", "executor.dialect"}) || f.Usage != "vllm or sglang (the planner and executor)" {
		t.Errorf("--dialect %+v", f)
	}
	if f := byName["planner-url"]; f.Usage != "planner: base `URL`s" || !f.Split || f.Category != "2. endpoints" {
		t.Errorf("--planner-url %+v", f)
	}
	if f := byName["wait"]; f.Default != time.Minute {
		t.Errorf("--wait default %#v, want a time.Duration", f.Default)
	}
	if f := byName["clip"]; f.DefaultText != "0.2" {
		t.Errorf("--clip default text %q", f.DefaultText)
	}
}

// TestKeys: every key is listed in file order with its doc (registry
// placeholders filled), default and flag.
func TestKeys(t *testing.T) {
	lines := testSchema().Keys()
	if len(lines) != 14 {
		t.Fatalf("%d keys: %q", len(lines), lines)
	}
	for i, want := range map[int]string{0: "queries per step (B) (default: 8) (--size)", 1: "how long (default: 1m0s) (--wait)",
		3: "clip (default: 0.2) (--clip)", 5: "vllm or sglang (default: vllm) (--dialect)", 13: "a, b"} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d %q, want it to end %q", i, lines[i], want)
		}
	}
	if strings.Contains(lines[11], "(--") {
		t.Errorf("a key under flag:\"-\" has a flag: %q", lines[11])
	}
}

// TestSet: values are set by flag name, lists split or appended, a
// duration converted, a pointer to the field's type dereferenced; wrong
// types and unknown flags are errors.
func TestSet(t *testing.T) {
	s := testSchema()
	c := s.Default.(config)
	c.Hosts = []string{"file"}
	lv := &level{n: 3}
	for name, v := range map[string]any{"size": 4, "wait": time.Second, "host": []string{"a,b"}, "planner-url": []string{"http://x, http://y"},
		"dialect": "sglang", "planner-level": lv} {
		if err := s.Set(&c, name, v); err != nil {
			t.Fatalf("Set(%s): %v", name, err)
		}
	}
	want := config{Size: 4, Wait: yamlstrict.Duration{Duration: time.Second}, Hosts: []string{"file", "a,b"},
		Planner: endpoint{URLs: []string{"http://x", "http://y"}, Dialect: "sglang", Level: lv}, Executor: endpoint{Dialect: "sglang"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
	var conc yamlstrict.Duration
	if err := s.Set(&c, "wait", &conc); err != nil || c.Wait != conc {
		t.Errorf("a pointer to the field's type: %v, %v", err, c.Wait)
	}
	if err := s.Set(&c, "size", "eight"); err == nil {
		t.Error("a value of the wrong type: no error")
	}
	if err := s.Set(&c, "nope", 1); err == nil {
		t.Error("an unknown flag: no error")
	}
}
