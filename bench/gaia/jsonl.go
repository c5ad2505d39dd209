package gaia

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mgrpo/mgrpo/bench"
)

// jsonRow is a metadata.jsonl line; Level is an integer in some releases and a string in others.
type jsonRow struct {
	TaskID    string          `json:"task_id"`
	Question  string          `json:"Question"`
	Level     json.RawMessage `json:"Level"`
	Answer    json.RawMessage `json:"Final answer"`
	FileName  string          `json:"file_name"`
	Annotator any             `json:"Annotator Metadata"`
}

func readJSONL(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gaia: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var out []record
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("gaia %s:%d", path, line)
		var row jsonRow
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		level, err := bench.ScalarText(row.Level)
		if err != nil {
			return nil, fmt.Errorf("%s: Level: %w", where, err)
		}
		answer, err := bench.ScalarText(row.Answer)
		if err != nil {
			return nil, fmt.Errorf("%s: Final answer: %w", where, err)
		}
		r := record{TaskID: row.TaskID, Question: row.Question, Level: level, Answer: answer,
			FileName: row.FileName, Annotator: row.Annotator}
		if err := r.check(where); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gaia %s: %w", path, err)
	}
	return out, nil
}
