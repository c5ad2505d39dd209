package gaia

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/mgrpo/mgrpo/bench"
)

// The files below are synthetic, in GAIA's exact layout; no GAIA text is used.

const syntheticJSONL = `{"task_id": "t1", "Question": "What is 2+2?", "Level": 1, "Final answer": "4", "file_name": "", "Annotator Metadata": {"Steps": "add", "Number of steps": "1"}}
{"task_id": "t2", "Question": "Name the file's colour.", "Level": "2", "Final answer": "blue", "file_name": "t2.png", "Annotator Metadata": {"Steps": "look"}}

{"task_id": "t3", "Question": "List three primes.", "Level": "3", "Final answer": "2, 3, 5", "file_name": ""}
`

func writeFile(tb testing.TB, dir, name, body string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

type annotator struct {
	Steps         string `parquet:"Steps"`
	NumberOfSteps string `parquet:"Number of steps"`
}

type parquetRowInt struct {
	TaskID    string    `parquet:"task_id"`
	Question  string    `parquet:"Question"`
	Level     int64     `parquet:"Level"`
	Answer    string    `parquet:"Final answer"`
	FileName  string    `parquet:"file_name"`
	Annotator annotator `parquet:"Annotator Metadata"`
}

type parquetRowString struct {
	TaskID    string    `parquet:"task_id"`
	Question  string    `parquet:"Question"`
	Level     string    `parquet:"Level"`
	Answer    string    `parquet:"Final answer"`
	FileName  string    `parquet:"file_name"`
	Annotator annotator `parquet:"Annotator Metadata"`
}

func summary(items []bench.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, strings.Join([]string{it.ID, it.Level, it.Answer, filepath.Base(it.Attachment), it.Question}, "|"))
	}
	return out
}

var wantAll = []string{
	"t1|1|4|.|What is 2+2?",
	"t2|2|blue|t2.png|Name the file's colour.",
	"t3|3|2, 3, 5|.|List three primes.",
}

func TestLoadJSONL(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "metadata.jsonl", syntheticJSONL)
	items, err := Load(dir, bench.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantAll, summary(items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if got, want := items[1].Attachment, filepath.Join(dir, "t2.png"); got != want {
		t.Errorf("attachment = %q, want %q", got, want)
	}
	meta, _ := items[0].Extra["annotator_metadata"].(map[string]any)
	if meta["Steps"] != "add" {
		t.Errorf("annotator metadata = %v", items[0].Extra)
	}
}

func TestLoadParquet(t *testing.T) {
	for name, write := range map[string]func(path string) error{
		"int level": func(p string) error {
			return parquet.WriteFile(p, []parquetRowInt{
				{"t1", "What is 2+2?", 1, "4", "", annotator{"add", "1"}},
				{"t2", "Name the file's colour.", 2, "blue", "t2.png", annotator{Steps: "look"}},
				{"t3", "List three primes.", 3, "2, 3, 5", "", annotator{}},
			})
		},
		"string level": func(p string) error {
			return parquet.WriteFile(p, []parquetRowString{
				{"t1", "What is 2+2?", "1", "4", "", annotator{"add", "1"}},
				{"t2", "Name the file's colour.", "2", "blue", "t2.png", annotator{Steps: "look"}},
				{"t3", "List three primes.", "3", "2, 3, 5", "", annotator{}},
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "metadata.parquet")
			if err := write(path); err != nil {
				t.Fatal(err)
			}
			items, err := Load(path, bench.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantAll, summary(items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			meta, _ := items[0].Extra["annotator_metadata"].(map[string]any)
			if meta["Steps"] != "add" {
				t.Errorf("annotator metadata = %#v", items[0].Extra)
			}
		})
	}
}

func TestLoadFilters(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "metadata.jsonl", syntheticJSONL)
	tests := []struct {
		name string
		f    bench.Filter
		want []string
	}{
		{"level", bench.Filter{Levels: []string{"1", "3"}}, []string{"t1", "t3"}},
		{"text only", bench.Filter{TextOnly: true}, []string{"t1", "t3"}},
		{"ids", bench.Filter{IDs: []string{"t3", "t2"}}, []string{"t2", "t3"}},
		{"limit", bench.Filter{Limit: 1}, []string{"t1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, err := Load(path, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.ID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Load(path, bench.Filter{IDs: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown id error = %v, want it named", err)
	}
}

func TestLoadErrorsNameLine(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"bad json", "{\"task_id\": \"a\", \"Question\": \"q\", \"Level\": 1}\n{oops\n", "metadata.jsonl:2"},
		{"missing level", "{\"task_id\": \"a\", \"Question\": \"q\"}\n", "metadata.jsonl:1: task a: missing Level"},
		{"bad level", "{\"task_id\": \"a\", \"Question\": \"q\", \"Level\": [1]}\n", "metadata.jsonl:1: Level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "metadata.jsonl", tc.body)
			_, err := Load(path, bench.Filter{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := Load(t.TempDir(), bench.Filter{}); err == nil {
		t.Error("empty folder: want an error")
	}
}
