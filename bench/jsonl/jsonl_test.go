package jsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
)

func write(tb testing.TB, body string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := write(t, `{"id": "a", "question": "2+2?", "answer": "4", "metadata": {"level": 1, "lang": "en", "source": "sim"}}
{"id": 7, "question": "Capital of France?", "answer": "Paris"}
`)
	items, err := Load(p, bench.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("got %d items, want 2", len(items))
	}
	a, b := items[0], items[1]
	if a.ID != "a" || a.Level != "1" || a.Lang != "en" || a.Extra["source"] != "sim" || a.Answer != "4" {
		t.Errorf("item a = %+v", a)
	}
	if b.ID != "7" || b.Question != "Capital of France?" || b.Benchmark != bench.JSONL {
		t.Errorf("item b = %+v", b)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"{\"question\": \"q\", \"answer\": \"a\"}\n", ":1: id"},
		{"{\"id\": 1, \"question\": \"q\", \"answer\": \"a\"}\n{\"id\": 1, \"question\": \"q\", \"answer\": \"a\"}\n", ":2: duplicate id 1"},
		{"{\"id\": 1, \"answer\": \"a\"}\n", ":1: missing question"},
		{"{\"id\": 1, \"question\": \"q\"}\n", ":1: answer"},
		{"\n\nnot json\n", ":3:"},
	} {
		_, err := Load(write(t, tc.body), bench.Filter{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("body %q: error = %v, want it to contain %q", tc.body, err, tc.want)
		}
	}
}
