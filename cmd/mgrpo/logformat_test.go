package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryLogLineHonoursLogFormat runs `mgrpo --log-format json train
// --sim` as its own process: every line on stderr, the Tinker bridge's
// included, is a JSON object.
func TestEveryLogLineHonoursLogFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and trains in the sim world")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	p := startMgrpo(t, "--log-format", "json", "train", "--sim", "--steps", "1", "--batch-size", "2", "--group-size", "2", "--out", out)
	p.wait(t, 3*time.Minute)
	log := p.stderr.String()
	tinker := false
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON log line: %q", line)
			continue
		}
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "tinker ") {
			tinker = true
		}
	}
	if !tinker {
		t.Errorf("no tinker bridge line in the log (the check would not cover it):\n%s", log)
	}
}
