package llm

import (
	"slices"
	"testing"
)

// TestSSEEvents checks the event-stream reading on line ends, multi-line
// data, comments and other fields, and a cut last event.
func TestSSEEvents(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
		done       bool
	}{
		{"lf", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", []string{"a", "b"}, true},
		{"crlf", "data: a\r\n\r\ndata:b\r\n\r\ndata: [DONE]\r\n\r\n", []string{"a", "b"}, true},
		{"cr", "data: a\r\rdata: b\r\rdata: [DONE]\r\r", []string{"a", "b"}, true},
		{"mixed", "data: a\r\n\rdata: b\n\r\ndata: [DONE]\n\n", []string{"a", "b"}, true},
		{"multi-line", "data: a\ndata: b\ndata:  c\n\ndata: d\n\n", []string{"a\nb\n c", "d"}, false},
		{"fields and comments", ": hi\nevent: x\nid: 1\ndata\n\nretry: 3\ndata: e\n\n", []string{"", "e"}, false},
		{"cut", "data: a\n\ndata: b\n", []string{"a"}, false},
		{"cut in line", "data: a\n\ndata: b", []string{"a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			done, err := sseEvents([]byte(tc.body), func(d []byte) error {
				got = append(got, string(d))
				return nil
			})
			if err != nil || done != tc.done || !slices.Equal(got, tc.want) {
				t.Errorf("events %q, done %v, %v; want %q, done %v", got, done, err, tc.want, tc.done)
			}
		})
	}
}
