package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	info := func(version string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/mgrpo/mgrpo", Version: version}, Settings: settings}, true
		}
	}
	for _, tc := range []struct {
		name, ldflags string
		read          func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"ldflags win", "1.2.3", info("v0.1.0"), "1.2.3"},
		{"go install of a tag", "dev", info("v0.4.0"), "v0.4.0, go1.26.0"},
		{"a clone", "dev", info("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			debug.BuildSetting{Key: "vcs.modified", Value: "true"}, debug.BuildSetting{Key: "vcs.time", Value: "2026-12-07T05:00:00Z"}),
			"devel, commit 0123456789ab (modified) 2026-12-07T05:00:00Z, go1.26.0"},
		{"-buildvcs=false", "dev", info("(devel)"), "devel, commit unknown"},
		{"no build info", "dev", func() (*debug.BuildInfo, bool) { return nil, false }, "dev (no build info)"},
	} {
		if got := describeBuild(tc.ldflags, tc.read); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want it to start with %q", tc.name, got, tc.want)
		}
	}
	code, stdout, _ := runCLI(t, "--version")
	if code != 0 || strings.Contains(stdout, "version dev\n") || !strings.Contains(stdout, "go1.") {
		t.Errorf("--version: exit %d, %q; want the build's version and Go version", code, stdout)
	}
}
