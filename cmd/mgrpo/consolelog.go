package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// tableMessages are the log messages the step table already shows, row
// for row: on a terminal they are left out of the log, so that each step
// is said once. Structured logs (--log-format json, or text to a file or
// pipe) keep them.
var tableMessages = map[string]bool{"step done": true}

// consoleHandler writes log records for a person at a terminal, in the one
// format the terminal shows besides the bar and the step table: the time
// of day, the level when it is not info, the message, then the attributes
// as key value pairs with numbers rounded to 3 significant digits:
//
//	12:01:09 dbar: step 2, dbar 2, source previous step, spec auto
//	12:01:10 WARN endpoint ejected: url http://10.0.0.5:8000, after 3 failures
type consoleHandler struct {
	w     io.Writer
	level slog.Leveler
	mu    *sync.Mutex
	// pre are the rendered attributes of With, group the prefix of later
	// ones (WithGroup).
	pre   []string
	group string
}

func newConsoleHandler(w io.Writer, level slog.Leveler) *consoleHandler {
	return &consoleHandler{w: w, level: level, mu: &sync.Mutex{}}
}

func (h *consoleHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *consoleHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && tableMessages[r.Message] {
		return nil
	}
	var b strings.Builder
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b.WriteString(t.Format("15:04:05"))
	b.WriteByte(' ')
	if r.Level != slog.LevelInfo {
		b.WriteString(r.Level.String())
		b.WriteByte(' ')
	}
	b.WriteString(r.Message)
	parts := append([]string(nil), h.pre...)
	r.Attrs(func(a slog.Attr) bool {
		parts = appendAttr(parts, h.group, a)
		return true
	})
	if len(parts) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(parts, ", "))
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// appendAttr renders a (a group as its members, keys prefixed) onto parts.
func appendAttr(parts []string, prefix string, a slog.Attr) []string {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return parts
	}
	key := a.Key
	if prefix != "" && key != "" {
		key = prefix + "." + key
	} else if key == "" {
		key = prefix
	}
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			parts = appendAttr(parts, key, g)
		}
		return parts
	}
	return append(parts, key+" "+consoleValue(v))
}

// consoleValue formats an attribute's value for reading.
func consoleValue(v slog.Value) string {
	switch v.Kind() {
	case slog.KindFloat64:
		return sig3(v.Float64())
	case slog.KindDuration:
		return v.Duration().Round(time.Millisecond).String()
	case slog.KindTime:
		return v.Time().Format(time.TimeOnly)
	case slog.KindString:
		return v.String()
	}
	return fmt.Sprint(v.Any())
}

func (h *consoleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.pre = append([]string(nil), h.pre...)
	for _, a := range as {
		c.pre = appendAttr(c.pre, h.group, a)
	}
	return &c
}

func (h *consoleHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}
