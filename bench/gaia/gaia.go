// Package gaia loads the GAIA benchmark from its published metadata files: metadata.jsonl (older
// layout) or metadata.parquet (current layout), with fields task_id, Question, Level, Final answer,
// file_name and Annotator Metadata. Attachments are resolved next to the metadata file.
package gaia

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mgrpo/mgrpo/bench"
)

// record is one GAIA row after decoding, whatever the file layout.
type record struct {
	TaskID    string
	Question  string
	Level     string
	Answer    string
	FileName  string
	Annotator any
}

// Load reads GAIA items from path, which is a metadata.jsonl or metadata.parquet file or a folder
// holding one of them (parquet preferred), and applies f. Errors name the file and the line or row.
func Load(path string, f bench.Filter) ([]bench.Item, error) {
	file, err := resolve(path)
	if err != nil {
		return nil, err
	}
	var recs []record
	if strings.HasSuffix(file, ".parquet") {
		recs, err = readParquet(file)
	} else {
		recs, err = readJSONL(file)
	}
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	items := make([]bench.Item, 0, len(recs))
	for _, r := range recs {
		it := bench.Item{
			ID:        r.TaskID,
			Benchmark: bench.GAIA,
			Question:  r.Question,
			Answer:    r.Answer,
			Level:     r.Level,
		}
		if r.FileName != "" {
			it.Attachment = filepath.Join(dir, r.FileName)
		}
		if r.Annotator != nil {
			it.Extra = map[string]any{"annotator_metadata": r.Annotator}
		}
		items = append(items, it)
	}
	out, err := f.Apply(items)
	if err != nil {
		return nil, fmt.Errorf("gaia %s: %w", file, err)
	}
	return out, nil
}

// resolve turns a folder into the metadata file inside it.
func resolve(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("gaia: %w", err)
	}
	if !st.IsDir() {
		return path, nil
	}
	for _, name := range []string{"metadata.parquet", "metadata.jsonl"} {
		p := filepath.Join(path, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("gaia: no metadata.parquet or metadata.jsonl in %s", path)
}

// check validates a decoded record; where names the file and line or row.
func (r record) check(where string) error {
	switch {
	case r.TaskID == "":
		return fmt.Errorf("%s: missing task_id", where)
	case r.Question == "":
		return fmt.Errorf("%s: task %s: missing Question", where, r.TaskID)
	case r.Level == "":
		return fmt.Errorf("%s: task %s: missing Level", where, r.TaskID)
	}
	return nil
}
