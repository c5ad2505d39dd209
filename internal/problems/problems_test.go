package problems

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var errConfig = errors.New("configuration error")

func TestJoin(t *testing.T) {
	tasks := fmt.Errorf("%w: batch_size: 4: more than the 2 tasks", errConfig)
	down := errors.New("before starting:\nplanner endpoint http://a: unreachable\nexecutor endpoint http://b: unreachable")
	key := fmt.Errorf("%w: search.provider: set SERPER_API_KEY", errConfig)
	strip := []string{errConfig.Error() + ": ", "before starting:\n"}

	if err := Join(strip, nil, nil); err != nil {
		t.Errorf("Join of nils = %v, want nil", err)
	}
	if err := Join(strip, nil, down); err != down {
		t.Errorf("Join of one error = %v, want it as it is", err)
	}
	err := Join(strip, tasks, Join(strip, key, down))
	want := "before starting, 4 problems (fix them all, then run again):\n" +
		"- batch_size: 4: more than the 2 tasks\n" +
		"- search.provider: set SERPER_API_KEY\n" +
		"- planner endpoint http://a: unreachable\n" +
		"- executor endpoint http://b: unreachable"
	if got := err.Error(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	if !errors.Is(err, errConfig) || !errors.Is(err, down) {
		t.Errorf("errors.Is misses a joined error: %v", err)
	}
	if errors.Is(Join(strip, down, errors.New("x")), errConfig) {
		t.Error("a Join of no configuration error is one")
	}
	cont := Join(nil, errors.New("a\n  more of a\nb"), errors.New("c"))
	if got := cont.Error(); !strings.Contains(got, "3 problems") || !strings.Contains(got, "- a\n  more of a\n- b") {
		t.Errorf("indented lines should continue their problem:\n%s", got)
	}
}
