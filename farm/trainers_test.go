package farm

import (
	"testing"

	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

func TestSyncPauseKeepsRequestsAsynchronously(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		staleness int
		pause     bool
		mode      string
	}{
		{weightsync.KindSGLang, 0, false, ""},
		{weightsync.KindVLLM, 0, false, ""},
		{weightsync.KindSGLang, 1, true, "in_place"},
		{weightsync.KindVLLM, 2, true, "keep"},
		{weightsync.KindNone, 1, false, ""},
	} {
		pause, mode := syncPause(tc.kind, tc.staleness)
		if pause != tc.pause || mode != tc.mode {
			t.Errorf("%s at S=%d: pause %v mode %q, want %v %q", tc.kind, tc.staleness, pause, mode, tc.pause, tc.mode)
		}
	}
}
