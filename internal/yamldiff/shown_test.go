package yamldiff

import (
	"reflect"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

func TestShown(t *testing.T) {
	f := 0.5
	var unset *float64
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"string quoted", "vllm", `"vllm"`},
		{"url credentials redacted", "redis://u:secret@h:6379/0", `"redis://h:6379/0"`},
		{"url list joined and redacted", []string{"http://a:1", "https://u:p@b:2/v1"}, `"http://a:1,https://b:2/v1"`},
		{"duration", yamlstrict.Duration{Duration: 90 * time.Second}, "1m30s"},
		{"pointer set", &f, "0.5"},
		{"pointer unset", unset, "unset"},
		{"int", 8, "8"},
		{"bool", true, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Shown(reflect.ValueOf(tc.v)); got != tc.want {
				t.Errorf("Shown(%v) = %s, want %s", tc.v, got, tc.want)
			}
		})
	}
}
