package rollout

import "testing"

func TestCacheCountsAdd(t *testing.T) {
	tests := []struct {
		name  string
		calls [][3]int // requests, hits, shared
		want  CacheCounts
	}{
		{"none", nil, CacheCounts{}},
		{"no requests", [][3]int{{0, 0, 0}}, CacheCounts{}},
		{"mixed", [][3]int{{3, 2, 1}, {1, 0, 0}}, CacheCounts{Requests: 4, Hits: 2, SharedHits: 1, Misses: 2, HitRate: 0.5}},
		{"clamped", [][3]int{{2, 5, 9}, {-1, 1, 0}}, CacheCounts{Requests: 2, Hits: 2, SharedHits: 2, HitRate: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got CacheCounts
			for _, c := range tc.calls {
				got.Add(c[0], c[1], c[2])
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
