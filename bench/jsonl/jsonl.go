// Package jsonl loads the project's generic benchmark format: JSON Lines of
// {"id", "question", "answer", "metadata"?}. String or number metadata values named level, type,
// difficulty, lang or domain fill the item's category fields; all metadata is kept in Extra.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/mgrpo/mgrpo/bench"
)

type row struct {
	ID       json.RawMessage `json:"id"`
	Question *string         `json:"question"`
	Answer   json.RawMessage `json:"answer"`
	Metadata map[string]any  `json:"metadata"`
}

// Load reads a generic JSONL file and applies f. Errors name the file and line.
func Load(path string, f bench.Filter) ([]bench.Item, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	var items []bench.Item
	seen := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("jsonl %s:%d", path, line)
		var r row
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		id, err := bench.ScalarText(r.ID)
		if err != nil || id == "" {
			return nil, fmt.Errorf("%s: id must be a non-empty string or number", where)
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("%s: duplicate id %s (first on line %d)", where, id, prev)
		}
		seen[id] = line
		if r.Question == nil || *r.Question == "" {
			return nil, fmt.Errorf("%s: missing question", where)
		}
		answer, err := bench.ScalarText(r.Answer)
		if err != nil || answer == "" {
			return nil, fmt.Errorf("%s: answer must be a non-empty string or number", where)
		}
		it := bench.Item{ID: id, Benchmark: bench.JSONL, Question: *r.Question, Answer: answer}
		if len(r.Metadata) > 0 {
			it.Extra = r.Metadata
			for key, dst := range map[string]*string{
				"level": &it.Level, "type": &it.Type, "difficulty": &it.Difficulty, "lang": &it.Lang, "domain": &it.Domain,
			} {
				switch v := r.Metadata[key].(type) {
				case string:
					*dst = v
				case float64:
					*dst = strconv.FormatFloat(v, 'f', -1, 64)
				}
			}
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("jsonl %s: %w", path, err)
	}
	out, err := f.Apply(items)
	if err != nil {
		return nil, fmt.Errorf("jsonl %s: %w", path, err)
	}
	return out, nil
}
