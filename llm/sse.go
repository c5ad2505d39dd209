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
// is returned. The data event gets is a slice of body (or, for an event of
// several data lines, a buffer reused by the next such event): it must not
// be modified, and what is kept of it copied.
func sseEvents(body []byte, event func(data []byte) error) (done bool, err error) {
	var (
		// data is the event's data so far: its one line in body, or own
		// once a second line joins it.
		data, own     []byte
		hasData, owns bool
		// noLF records that the rest of body holds no LF (a CR-only
		// stream), so lines are not searched for one again.
		noLF bool
	)
	for len(body) > 0 {
		i := lineEnd(body, &noLF)
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
			data, hasData, owns = nil, false, false
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
		switch {
		case !hasData:
			data = value
		case !owns:
			own = append(append(append(own[:0], data...), '\n'), value...)
			data, owns = own, true
		default:
			own = append(append(own, '\n'), value...)
			data = own
		}
		hasData = true
	}
	return false, nil
}

// lineEnd returns the index of the first CR or LF of b, or -1. Two memchr
// scans find it faster than a scan for either byte; noLF carries what the
// first found about the rest of the body.
func lineEnd(b []byte, noLF *bool) int {
	lf := -1
	if !*noLF {
		if lf = bytes.IndexByte(b, '\n'); lf < 0 {
			*noLF = true
		}
	}
	limit := b
	if lf >= 0 {
		limit = b[:lf]
	}
	if cr := bytes.IndexByte(limit, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// streamError is the *DecodeError of a stream whose events could not be
// assembled into a sample.
func streamError(body []byte, format string, args ...any) error {
	return &DecodeError{Err: fmt.Errorf(format, args...), Snippet: snippet(body)}
}
