package llm

import (
	"reflect"
	"testing"
)

// TestPromptPrefixSharesOneArray checks that a trajectory's prompts share
// one growing array: the third turn's ids are written after the second's
// in place, and neither the earlier turns' ids nor appends to them see the
// later ones.
func TestPromptPrefixSharesOneArray(t *testing.T) {
	var p PromptPrefix
	decode := func(arr string) []int32 {
		t.Helper()
		body, _ := withPromptIDs(arr)
		r, err := decodeChatPrefix([]byte(body), false, &p, nil)
		if err != nil {
			t.Fatalf("%s: %v", arr, err)
		}
		p.remember(r.promptText, r.resp.PromptTokenIDs, nil)
		return r.resp.PromptTokenIDs
	}
	first := decode("[1,2,3]")
	second := decode("[1,2,3,4,5]")
	third := decode("[1,2,3,4,5,6,7]")
	if !reflect.DeepEqual(first, []int32{1, 2, 3}) || !reflect.DeepEqual(second, []int32{1, 2, 3, 4, 5}) || !reflect.DeepEqual(third, []int32{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("ids %v %v %v", first, second, third)
	}
	if &second[0] != &third[0] {
		t.Error("the third prompt did not extend the second's array in place")
	}
	if cap(second) != len(second) || cap(third) != len(third) {
		t.Errorf("turn ids not capped at their length: cap %d/%d, len %d/%d", cap(second), cap(third), len(second), len(third))
	}
	// A caller appending to an earlier turn's ids gets its own copy.
	grown := append(second, 99)
	if third[5] != 6 || &grown[0] == &third[0] {
		t.Errorf("appending to the second turn's ids reached the third's: %v", third)
	}
	// Drift starts a new array; the old turns keep theirs.
	fourth := decode("[1,9,3,4]")
	if !reflect.DeepEqual(fourth, []int32{1, 9, 3, 4}) || !reflect.DeepEqual(third, []int32{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("after drift: %v, third now %v", fourth, third)
	}
	fifth := decode("[1,9,3,4,8]")
	if !reflect.DeepEqual(fifth, []int32{1, 9, 3, 4, 8}) || !reflect.DeepEqual(third, []int32{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("after drift and growth: %v, third now %v", fifth, third)
	}
}
