package main

import (
	"runtime/debug"
	"strings"
)

// versionString says which build this is: the -ldflags version when set,
// else the module version from the build info (a tag with `go install
// …@v1.2.3`, "(devel)" from a clone), with the commit and whether the
// tree was modified when the build recorded them (not with
// -buildvcs=false, or outside a git checkout: then "commit unknown").
func versionString() string {
	return describeBuild(version, debug.ReadBuildInfo)
}

func describeBuild(ldflags string, read func() (*debug.BuildInfo, bool)) string {
	if ldflags != "dev" && ldflags != "" {
		return ldflags
	}
	info, ok := read()
	if !ok {
		return "dev (no build info)"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, modified, at string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	parts := []string{v}
	switch {
	case rev != "":
		c := "commit " + rev[:min(12, len(rev))]
		if modified == "true" {
			c += " (modified)"
		}
		if at != "" {
			c += " " + at
		}
		parts = append(parts, c)
	case !strings.HasPrefix(info.Main.Version, "v"):
		parts = append(parts, "commit unknown (built with -buildvcs=false or outside git)")
	}
	return strings.Join(append(parts, info.GoVersion), ", ")
}
