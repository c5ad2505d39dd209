package yamlstrict

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

type span struct{ time.Duration }

func (s *span) UnmarshalText(b []byte) error {
	d, err := time.ParseDuration(string(b))
	s.Duration = d
	return err
}

type doc struct {
	Name   string `yaml:"name"`
	Inner  inner  `yaml:"inner"`
	Wait   span   `yaml:"wait"`
	Counts []int  `yaml:"counts"`
	Inline `yaml:",inline"`
}

type inner struct {
	GroupSize int `yaml:"group_size"`
}

type Inline struct {
	Extra bool `yaml:"extra"`
}

// TestUnknownKeys: every unknown key is reported at once, with its line,
// column and the closest known key; inlined and text-typed fields count
// as known.
func TestUnknownKeys(t *testing.T) {
	data := []byte("name: x\ninner:\n  group_sise: 3\nwait: 3s\nextra: true\nnmae: y\n")
	got := UnknownKeys(data, &doc{})
	want := []string{
		"line 3, column 3: unknown key inner.group_sise (did you mean inner.group_size?)",
		"line 6, column 1: unknown key nmae (did you mean name?)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UnknownKeys = %q, want %q", got, want)
	}
	if got := UnknownKeys([]byte("name: [unclosed"), &doc{}); got != nil {
		t.Errorf("a document that does not parse: got %q, want nothing (the decoder reports it)", got)
	}
}

// TestDescribeError: a type error names the line, the key and the kinds
// of values in YAML's words, the caller's kinds first.
func TestDescribeError(t *testing.T) {
	kinds := map[reflect.Type]string{reflect.TypeFor[span](): "a duration such as 30s"}
	var d doc
	err := yaml.Unmarshal([]byte("name: x\ninner:\n  group_size: many\n"), &d)
	if err == nil {
		t.Fatal("a string for an int decoded")
	}
	got := DescribeError(err, kinds)
	if want := "line 3, column 15: key group_size: want an integer, got a string"; !strings.HasPrefix(got, want) {
		t.Errorf("DescribeError = %q, want it to start with %q", got, want)
	}
	if got, want := yamlKind(reflect.TypeFor[*span](), kinds), "a duration such as 30s"; got != want {
		t.Errorf("yamlKind(*span) = %q, want %q", got, want)
	}
}
