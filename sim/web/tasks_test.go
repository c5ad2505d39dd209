package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestWriteTasksGolden(t *testing.T) {
	w := MustWorld(t)
	// One question of each hop count keeps the golden files short.
	var qs []Question
	for h := 1; h <= 3; h++ {
		for _, q := range w.Questions {
			if q.Hops == h {
				qs = append(qs, q)
				break
			}
		}
	}
	for _, format := range TaskFormats {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTasks(&buf, qs, format); err != nil {
				t.Fatalf("WriteTasks(%q): %v", format, err)
			}
			lines := 0
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				lines++
				if !json.Valid(sc.Bytes()) {
					t.Errorf("line %d is not JSON: %s", lines, sc.Bytes())
				}
			}
			if got, want := lines, len(qs); got != want {
				t.Errorf("got %d lines, want %d", got, want)
			}
			var again bytes.Buffer
			WriteTasks(&again, qs, format)
			golden(t, "tasks_"+format+".jsonl", again.Bytes())
		})
	}
}

func TestWriteTasksUnknownFormat(t *testing.T) {
	err := WriteTasks(new(bytes.Buffer), nil, "csv")
	if err == nil {
		t.Fatal("WriteTasks(csv) = nil error, want one")
	}
	for _, want := range append([]string{`"csv"`}, TaskFormats...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestRebase(t *testing.T) {
	tests := []struct{ in, base, want string }{
		{PlaceholderBaseURL + "/site/a/", "http://127.0.0.1:8080", "http://127.0.0.1:8080/site/a/"},
		{PlaceholderBaseURL + "/site/a/", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/site/a/"},
		{"https://example.com/x", "http://h", "https://example.com/x"},
	}
	for _, tt := range tests {
		if got := Rebase(tt.in, tt.base); got != tt.want {
			t.Errorf("Rebase(%q, %q) = %q, want %q", tt.in, tt.base, got, tt.want)
		}
	}
}
