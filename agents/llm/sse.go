package llm

import (
	"bytes"
	"fmt"
)

// sseDone is the data of the event that ends an OpenAI-style stream.
var sseDone = []byte("[DONE]")

// sseEvents calls event with the data of each event of an event-stream
// body, in order, and reports whether the stream ended with the [DONE]
// event. It reads the text/event-stream format as vLLM and SGLang write it
// and as the format allows: lines end with LF, CRLF or CR; a "data" field's
// value follows the colon and one optional space; an event's data lines
// are joined with LF; a blank line ends the event; comment lines (a
// leading colon) and other fields (event, id, retry) are skipped. An event
// the body ends inside (no blank line after it) is not delivered: a cut
// stream's last event may be incomplete. event's error stops the walk and
// is returned.
func sseEvents(body []byte, event func(data []byte) error) (done bool, err error) {
	var (
		data    []byte
		hasData bool
	)
	for len(body) > 0 {
		i := bytes.IndexAny(body, "\r\n")
		if i < 0 {
			// The body ends inside a line: an incomplete event.
			return false, nil
		}
		line := body[:i]
		next := i + 1
		if body[i] == '\r' && next < len(body) && body[next] == '\n' {
			next++
		}
		body = body[next:]
		if len(line) == 0 {
			if !hasData {
				continue
			}
			if bytes.Equal(data, sseDone) {
				return true, nil
			}
			if err := event(data); err != nil {
				return false, err
			}
			data, hasData = data[:0], false
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			// A field name alone has an empty value; only data matters.
			name, value = line, nil
		}
		if string(name) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if hasData {
			data = append(data, '\n')
		}
		data = append(data, value...)
		hasData = true
	}
	return false, nil
}

// streamError is the *DecodeError of a stream whose events could not be
// assembled into a sample.
func streamError(body []byte, format string, args ...any) error {
	return &DecodeError{Err: fmt.Errorf(format, args...), Snippet: snippet(body)}
}
