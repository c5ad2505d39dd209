package farm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestConcurrencyValues(t *testing.T) {
	cases := []struct {
		in      string
		want    Concurrency
		json    string
		errPart string
	}{
		{in: "64", want: ConcurrencyOf(64), json: "64"},
		{in: "auto", want: AutoConcurrency(DefaultAutoRollouts), json: `"auto:256"`},
		{in: "AUTO:512", want: AutoConcurrency(512), json: `"auto:512"`},
		{in: "auto:0", errPart: "auto:CAP must be a whole number of at least 1"},
		{in: "auto:x", errPart: "auto:CAP"},
		{in: "many", errPart: `concurrency "many": want a number of rollouts in flight`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var c Concurrency
			err := c.Set(tc.in)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errPart)
				}
				return
			}
			if err != nil || c != tc.want {
				t.Fatalf("got %v, %v; want %v", c, err, tc.want)
			}
			b, _ := json.Marshal(c)
			if string(b) != tc.json {
				t.Fatalf("json %s, want %s", b, tc.json)
			}
			var back Concurrency
			if err := json.Unmarshal(b, &back); err != nil || back != c {
				t.Fatalf("json round trip: %v, %v", back, err)
			}
		})
	}
}
