package run

import (
	"slices"
	"testing"
	"time"
)

func TestFlagsAreDerivedFromTags(t *testing.T) {
	byName := map[string]FlagSpec{}
	for _, f := range Flags(ScopeAgent, ScopeFarm, ScopeTrain) {
		if _, dup := byName[f.Name]; dup {
			t.Errorf("flag --%s listed twice", f.Name)
		}
		byName[f.Name] = f
	}
	tests := []struct {
		flag, scope string
		keys        []string
		def         any
	}{
		{"group-size", ScopeFarm, []string{"group_size"}, 8},
		{"seed", ScopeAgent, []string{"seed"}, uint64(1)},
		{"dialect", ScopeAgent, []string{"planner.dialect", "executor.dialect"}, "vllm"},
		{"planner-url", ScopeAgent, []string{"planner.urls"}, []string(nil)},
		{"rollout-timeout", ScopeAgent, []string{"budgets.rollout_timeout"}, 30 * time.Minute},
		{"weight-update-path", ScopeTrain, []string{"train.vllm_update_path"}, ""},
		{"max-staleness", ScopeTrain, []string{"train.max_staleness"}, 0},
		{"expert-fallback", ScopeFarm, []string{"rewards.expert_fallback"}, "format"},
	}
	for _, tt := range tests {
		f, ok := byName[tt.flag]
		if !ok {
			t.Errorf("--%s: missing", tt.flag)
			continue
		}
		if f.Scope != tt.scope || !slices.Equal(f.Keys, tt.keys) {
			t.Errorf("--%s: scope %s keys %v, want %s %v", tt.flag, f.Scope, f.Keys, tt.scope, tt.keys)
		}
		if got, want := f.Default, tt.def; !equalAny(got, want) {
			t.Errorf("--%s: default %#v, want %#v", tt.flag, got, want)
		}
	}
	for _, name := range []string{"grace", "reasoner-url", "judge-dialect", "prompts"} {
		if _, ok := byName[name]; ok {
			t.Errorf("--%s: a key without a flag tag has a flag", name)
		}
	}
	if f := byName["group-size"]; f.Usage != "rollouts per query (`K`; the paper uses 8)" {
		t.Errorf("--group-size usage %q: want the doc with its placeholder in backquotes", f.Usage)
	}
}

func equalAny(a, b any) bool {
	as, aok := a.([]string)
	bs, bok := b.([]string)
	if aok || bok {
		return aok && bok && slices.Equal(as, bs)
	}
	return a == b
}

func TestSetFlag(t *testing.T) {
	c := DefaultConfig()
	c.Search.AllowHosts = []string{"from-yaml"}
	timeout := TimeoutOf(90 * time.Second)
	for name, v := range map[string]any{
		"group-size": 4, "seed": uint64(9), "dialect": "sglang", "planner-url": []string{"http://a, http://b", "http://c"},
		"allow-host": []string{"x:1"}, "rollout-timeout": time.Minute, "call-timeout": &timeout, "stream": true,
		"clip-low": 0.3, "weight-update-command": []string{"a,b", "c"},
	} {
		if err := c.SetFlag(name, v); err != nil {
			t.Fatalf("SetFlag(%s): %v", name, err)
		}
	}
	if c.GroupSize != 4 || c.Seed != 9 || c.Planner.Dialect != "sglang" || c.Executor.Dialect != "sglang" || !c.Planner.Stream || !c.Executor.Stream {
		t.Errorf("scalars: %+v", c)
	}
	if want := []string{"http://a", "http://b", "http://c"}; !slices.Equal(c.Planner.URLs, want) {
		t.Errorf("planner.urls %v, want %v (comma-separated values split)", c.Planner.URLs, want)
	}
	if want := []string{"from-yaml", "x:1"}; !slices.Equal(c.Search.AllowHosts, want) {
		t.Errorf("search.allow_hosts %v, want %v (the flag adds to the file's)", c.Search.AllowHosts, want)
	}
	if want := []string{"a,b", "c"}; !slices.Equal(c.Train.VLLMUpdateCommand, want) {
		t.Errorf("train.vllm_update_command %v, want %v (arguments are not split)", c.Train.VLLMUpdateCommand, want)
	}
	if c.Budgets.RolloutTimeout.Duration != time.Minute || c.Executor.CallTimeout != timeout || c.Train.ClipLow != 0.3 {
		t.Errorf("durations and floats: %v %v %v", c.Budgets.RolloutTimeout, c.Executor.CallTimeout, c.Train.ClipLow)
	}
	if err := c.SetFlag("group-size", "eight"); err == nil {
		t.Error("SetFlag with a value of the wrong type: no error")
	}
	if err := c.SetFlag("no-such-flag", 1); err == nil {
		t.Error("SetFlag of an unknown flag: no error")
	}
}
