package llm

import (
	"reflect"
	"strings"
	"testing"
)

// withPromptIDs returns okVLLM (top-level ids) and okSGLang (the choice's)
// with their prompt_token_ids arrays replaced by arr.
func withPromptIDs(arr string) (vllm, sglang string) {
	return strings.Replace(okVLLM, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":`+arr, 1),
		strings.Replace(okSGLang, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":`+arr, 1)
}

// prefixFrom decodes arr as a previous answer's prompt ids and returns the
// PromptPrefix a call would carry after it.
func prefixFrom(t testing.TB, arr string) *PromptPrefix {
	t.Helper()
	body, _ := withPromptIDs(arr)
	r, err := decodeChat([]byte(body), false, nil)
	if err != nil {
		t.Fatalf("previous answer %s: %v", arr, err)
	}
	var p PromptPrefix
	p.remember(r.promptText, r.resp.PromptTokenIDs, nil)
	return &p
}

// sameDecode checks that decoding body with prefix gives what decoding it
// without one gives.
func sameDecode(t *testing.T, body string, prefix *PromptPrefix) {
	t.Helper()
	want, werr := decodeChat([]byte(body), false, nil)
	got, gerr := decodeChatPrefix([]byte(body), false, prefix, nil)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("errors differ with a prefix: %v vs %v\n%s", gerr, werr, body)
	}
	if werr != nil {
		return
	}
	if !reflect.DeepEqual(got.resp, want.resp) || !reflect.DeepEqual(got.ch, want.ch) || !reflect.DeepEqual(got.logprobs, want.logprobs) {
		t.Fatalf("decoding with a prefix differs:\n got %+v %+v\nwant %+v %+v\n%s", got.resp, got.ch, want.resp, want.ch, body)
	}
}

func TestPromptPrefixDecodesTheSame(t *testing.T) {
	for _, tc := range []struct{ prev, next string }{
		{"[1,2,3]", "[1,2,3,4,5]"},           // extends: the prefix is used
		{"[1,2,3]", "[1,2,34,5]"},            // 3 became 34: a longer number, not a match
		{"[1,2,3]", "[1,2,3]"},               // nothing new
		{"[1,2,3]", "[1,2]"},                 // shorter
		{"[1,2,3]", "[9,2,3,4]"},             // drift at the start
		{"[1, 2, 3]", "[1, 2, 3, 4]"},        // spaced, extends
		{"[1, 2, 3 ]", "[1, 2, 3 , 4]"},      // space before the comma: decoded whole
		{"[1,2,3]", "[1,2,3,]"},              // malformed after the prefix
		{"[1,2,3]", "[1,2,3,-4,5]"},          // a sign after the prefix
		{"[1,2,3]", "[1,2,3,12345678901,5]"}, // a long number after the prefix
		{"[1,2,3]", "null"},                  // no ids
		{"[]", "[1]"},                        // nothing remembered
		{"[5,6,7,8,9,10,11,12]", "[5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]"}, // word-at-a-time path after the prefix
	} {
		p := prefixFrom(t, tc.prev)
		v, s := withPromptIDs(tc.next)
		sameDecode(t, v, p)
		sameDecode(t, s, p)
	}
}

// TestPromptPrefixIsUsed checks the copy path is taken: a prefix whose ids
// do not match its text (which never happens for real) shows through.
func TestPromptPrefixIsUsed(t *testing.T) {
	p := &PromptPrefix{text: digestText([]byte("[1,2,3")), ids: []int32{7, 8, 9}}
	v, s := withPromptIDs("[1,2,3,4]")
	r, err := decodeChatPrefix([]byte(v), false, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.resp.PromptTokenIDs; !reflect.DeepEqual(got, []int32{7, 8, 9, 4}) {
		t.Errorf("vLLM prompt ids %v, want the prefix's ids then 4", got)
	}
	if string(r.promptText) != "[1,2,3,4" {
		t.Errorf("prompt text %q, want %q", r.promptText, "[1,2,3,4")
	}
	r, err = decodeChatPrefix([]byte(s), false, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ch.PromptTokenIDs; !reflect.DeepEqual(got, []int32{7, 8, 9, 4}) {
		t.Errorf("SGLang prompt ids %v, want the prefix's ids then 4", got)
	}

	// remember keeps the text's digest, not the body, which is recycled.
	body := []byte("[1,2")
	var q PromptPrefix
	q.remember(body, []int32{1, 2}, nil)
	body[1] = '9'
	if !q.text.matches([]byte("[1,2")) || q.text.matches(body) {
		t.Errorf("remembered text changed with the body: %+v", q.text)
	}
	q.remember(nil, nil, nil)
	if q.text.n != 0 || q.ids != nil {
		t.Errorf("empty text did not forget the prefix: %+v %v", q.text, q.ids)
	}
}

// FuzzPromptPrefix checks that any prefix a real previous answer leaves
// decodes any next answer exactly as no prefix does.
func FuzzPromptPrefix(f *testing.F) {
	f.Add("[1,2,3]", "[1,2,3,4,5]")
	f.Add("[10, 20]", "[10, 20, 30]")
	f.Add("[1,2,3]", "[1,2,3 ,4]")
	f.Add("[123456789,1]", "[123456789,1,0]")
	f.Fuzz(func(t *testing.T, prev, next string) {
		body, _ := withPromptIDs(prev)
		r, err := decodeChat([]byte(body), false, nil)
		if err != nil {
			return
		}
		var p PromptPrefix
		p.remember(r.promptText, r.resp.PromptTokenIDs, nil)
		v, s := withPromptIDs(next)
		sameDecode(t, v, &p)
		sameDecode(t, s, &p)
	})
}
