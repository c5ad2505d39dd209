package weightsync

import (
	"strings"
	"testing"
)

func TestExpandPath(t *testing.T) {
	for _, c := range []struct {
		name, tmpl, ref string
		want            string
	}{
		{"default is the reference", "", "tinker://run-1/weights/step-3", "tinker://run-1/weights/step-3"},
		{"directory by role and step", "/mnt/ckpt/{role}/step-{step}", "tinker://run-1/weights/step-3", "/mnt/ckpt/planner/step-7"},
		{"padded step", "/ckpt/{role}/step-{step:6}", "", "/ckpt/planner/step-000007"},
		{"padded version", "/ckpt/v{version:3}", "x", "/ckpt/v004"},
		{"width smaller than the number", "/ckpt/{step:1}", "x", "/ckpt/7"},
		{"name of a tinker path", "/mnt/sync/{name}", "tinker://run-1/weights/step-3", "/mnt/sync/step-3"},
		{"name of a directory with a trailing slash", "/mnt/{name}", "/shared/ckpt/step-3/", "/mnt/step-3"},
		{"reference inside a path", "{ref}/hf", "/shared/ckpt/step-3", "/shared/ckpt/step-3/hf"},
		{"literal braces stay", "/ckpt/{Role}/{}/{step", "x", "/ckpt/{Role}/{}/{step"},
		{"every placeholder", "{ref}|{name}|{role}|{step}|{version}", "a/b", "a/b|b|planner|7|4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ExpandPath(c.tmpl, "planner", c.ref, 4, 7)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("ExpandPath(%q) = %q, want %q", c.tmpl, got, c.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	for _, c := range []struct {
		name, tmpl, want string
	}{
		{"unknown placeholder", "/ckpt/{rol}/step-{step}", "unknown placeholder {rol}"},
		{"action placeholder in a weights path", "/ckpt/{path}", "unknown placeholder {path}"},
		{"width on a string", "/ckpt/{role:3}", "a width applies to {step} and {version} only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ExpandPath(c.tmpl, "planner", "r", 1, 1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ExpandPath(%q) error %v, want one containing %q", c.tmpl, err, c.want)
			}
		})
	}
}

func TestJSONBodyTemplateEscapes(t *testing.T) {
	tm, err := parseTemplate(`{"model_path": "{path}", "step": {step}}`, actionPlaceholders)
	if err != nil {
		t.Fatal(err)
	}
	got := tm.expand(map[string]string{PlaceholderPath: `/odd "dir"\x`, PlaceholderStep: "3"}, jsonEscape)
	if want := `{"model_path": "/odd \"dir\"\\x", "step": 3}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
