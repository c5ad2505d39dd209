package webwalker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/internal/benchtest"
)

func TestLoadSharedTestJSON(t *testing.T) {
	path := benchtest.SharedData(t, "webwalkerqa/test.json")
	items, err := Load(path, bench.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 680 {
		t.Fatalf("loaded %d rows, want 680", len(items))
	}
	cells := map[string]int{}
	langs := map[string]int{}
	ids := map[string]bool{}
	for _, it := range items {
		cells[it.Type+"/"+it.Difficulty]++
		langs[it.Lang]++
		ids[it.ID] = true
		if it.Question == "" || it.Answer == "" || it.Extra["root_url"] == nil {
			t.Fatalf("item %s lacks question, answer or root_url", it.ID)
		}
	}
	wantCells := map[string]int{
		"single_source/easy": 80, "single_source/medium": 140, "single_source/hard": 120,
		"multi_source/easy": 80, "multi_source/medium": 140, "multi_source/hard": 120,
	}
	if diff := cmp.Diff(wantCells, cells); diff != "" {
		t.Errorf("type/difficulty counts (-want +got):\n%s", diff)
	}
	// 58 rows carry an empty lang in the published file.
	if diff := cmp.Diff(map[string]int{"zh": 375, "en": 247, "": 58}, langs); diff != "" {
		t.Errorf("lang counts (-want +got):\n%s", diff)
	}
	if len(ids) != 680 {
		t.Errorf("%d distinct ids, want 680", len(ids))
	}
	t.Logf("webwalkerqa: %d rows, cells %v, langs %v", len(items), cells, langs)
}

// Synthetic rows in the hub layout, lowercase and capitalised.
const hubJSONL = `{"question": "Q one?", "answer": "A1", "root_url": "https://a.example", "info": {"type": "single_source", "difficulty_level": "easy", "lang": "en", "domain": "conference", "source_website": ["https://a.example/x"], "golden_path": ["root->x"]}}
{"Question": "Q two?", "answer": "A2", "Root_Url": "https://b.example", "Info": {"Type": "multi_source", "Difficulty_Level": "hard", "Lang": "zh", "Domain": "game"}}
`

func TestLoadHubLayouts(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "main.jsonl")
	if err := os.WriteFile(lines, []byte(hubJSONL), 0o644); err != nil {
		t.Fatal(err)
	}
	flat := filepath.Join(dir, "flat.json")
	flatBody := `[{"Question": "Q one?", "answer": "A1", "root_url": "https://a.example", "type": "single_source", "difficulty_level": "easy", "lang": "en", "domain": "conference", "source_website": ["https://a.example/x"], "golden_path": ["root->x"]}]`
	if err := os.WriteFile(flat, []byte(flatBody), 0o644); err != nil {
		t.Fatal(err)
	}
	hub, err := Load(lines, bench.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, it := range hub {
		got = append(got, strings.Join([]string{it.Question, it.Answer, it.Type, it.Difficulty, it.Lang, it.Domain, it.Extra["root_url"].(string)}, "|"))
	}
	want := []string{
		"Q one?|A1|single_source|easy|en|conference|https://a.example",
		"Q two?|A2|multi_source|hard|zh|game|https://b.example",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hub items (-want +got):\n%s", diff)
	}
	flatItems, err := Load(flat, bench.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hub[0], flatItems[0]); diff != "" {
		t.Errorf("the same question differs between layouts (-hub +flat):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, body, want string
	}{
		{"bad line", "x.jsonl", "{\"question\": \"q\", \"answer\": \"a\"}\n\n{bad\n", "x.jsonl:3"},
		{"missing answer", "x.jsonl", "{\"question\": \"q\"}\n", "x.jsonl:1: missing answer"},
		{"array row", "x.json", `[{"Question": "q", "answer": "a"}, {"Question": "q2"}]`, "x.json: row 2: missing answer"},
		{"bad type", "x.json", `[{"Question": "q", "answer": "a", "type": {}}]`, "row 1: type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p, bench.Filter{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
