package yamldiff

import (
	"reflect"
	"testing"
	"time"
)

type dur struct{ time.Duration }

func (d *dur) UnmarshalText(b []byte) error {
	var err error
	d.Duration, err = time.ParseDuration(string(b))
	return err
}

type role struct {
	Model string   `yaml:"model"`
	URLs  []string `yaml:"urls"`
}

type config struct {
	Seed    int    `yaml:"seed"`
	Planner role   `yaml:"planner"`
	Grace   dur    `yaml:"grace"`
	Note    string `yaml:"-"`
	Hidden  string
}

func TestDiff(t *testing.T) {
	a := config{Seed: 1, Planner: role{Model: "m", URLs: []string{"http://a"}}, Grace: dur{time.Second}, Note: "x", Hidden: "y"}
	b := a
	if got := Diff(a, b, nil); len(got) != 0 {
		t.Errorf("Diff of equal values = %v, want none", got)
	}
	b.Seed, b.Planner.URLs, b.Grace, b.Note, b.Hidden = 7, []string{"http://b"}, dur{2 * time.Second}, "z", "w"
	got := Diff(a, b, func(v reflect.Value) string {
		if d, ok := v.Interface().(dur); ok {
			return d.String()
		}
		return reflect.ValueOf(v.Interface()).String()
	})
	want := []Change{{"seed", "<int Value>", "<int Value>"}, {"planner.urls", "<[]string Value>", "<[]string Value>"}, {"grace", "1s", "2s"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %v, want %v", got, want)
	}
	if got := Diff(a, b, nil); got[0] != (Change{"seed", "1", "7"}) {
		t.Errorf("default rendering = %v, want seed 1 → 7", got[0])
	}
}
