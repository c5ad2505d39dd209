package run

import (
	"strings"
	"testing"
)

func TestKeysNameTheirFlags(t *testing.T) {
	lines := map[string]string{}
	for _, l := range Keys() {
		f := strings.Fields(l)
		lines[f[0]] = l
	}
	for key, flag := range map[string]string{"group_size": "--group-size", "planner.urls": "--planner-url",
		"judge.model": "--judge-model", "search.provider": "--search-provider", "rewards.expert_fallback": "--expert-fallback",
		"planner.dialect": "--dialect", "executor.call_timeout": "--call-timeout", "planner.attempt_timeout": "--attempt-timeout",
		"budgets.rollout_timeout": "--rollout-timeout", "planner.stream": "--stream", "executor.idle_timeout": "--idle-timeout"} {
		if !strings.HasSuffix(lines[key], "("+flag+")") {
			t.Errorf("key %s: %q, want it to name %s", key, lines[key], flag)
		}
	}
	for _, key := range []string{"reasoner.urls", "grace", "budgets.max_tokens", "judge.dialect", "judge.call_timeout", "reasoner.attempt_timeout", "judge.stream", "reasoner.idle_timeout"} {
		if l, ok := lines[key]; !ok || strings.Contains(l, "(--") {
			t.Errorf("key %s: %q, want it listed without a flag", key, l)
		}
	}
	if !strings.Contains(lines["search.provider"], "serper, searxng, brave, tavily, retriever or local") {
		t.Errorf("search.provider does not list the registered providers: %q", lines["search.provider"])
	}
}
