package farm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// Task is one question of a task file.
type Task struct {
	ID       string          `json:"id"`
	Question string          `json:"question"`
	Answer   string          `json:"answer"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// LoadTasks reads the JSON Lines task file at path (see ReadTasks).
func LoadTasks(path string) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tasks: %w", err)
	}
	defer f.Close()
	return ReadTasks(f, path)
}

// ReadTasks reads tasks from JSON Lines, one object per line with the keys
// id, question and answer (non-empty strings) and optionally metadata (an
// object or null). Blank lines are skipped. Unknown keys, a value of the
// wrong type, trailing data after the object, a duplicate id and a file
// without tasks are errors; every error names the file (name) and the
// 1-based line number. Nothing is returned unless the whole input is valid.
func ReadTasks(r io.Reader, name string) ([]Task, error) {
	br := bufio.NewReader(r)
	seen := make(map[string]int)
	var tasks []Task
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: read: %w", name, line, err)
		}
		if line == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			t, perr := parseTask(raw)
			if perr != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, perr)
			}
			if first, dup := seen[t.ID]; dup {
				return nil, fmt.Errorf("%s:%d: duplicate id %q (first on line %d)", name, line, t.ID, first)
			}
			seen[t.ID] = line
			tasks = append(tasks, t)
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no tasks", name)
	}
	return tasks, nil
}

// parseTask decodes and checks one non-blank line. Keys are matched exactly
// (encoding/json alone would accept "ID" for "id").
func parseTask(raw []byte) (Task, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return Task{}, fmt.Errorf("invalid task: %w", err)
	}
	if obj == nil {
		return Task{}, fmt.Errorf("invalid task: want a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Task{}, fmt.Errorf("invalid task: data after the JSON object")
	}
	taskKeys := []string{"id", "question", "answer", "metadata"}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(taskKeys, key) {
			return Task{}, fmt.Errorf("invalid task: unknown key %q (allowed: %s)", key, strings.Join(taskKeys, ", "))
		}
	}
	var fields [3]string
	for i, key := range taskKeys[:3] {
		v, ok := obj[key]
		if !ok {
			return Task{}, fmt.Errorf("invalid task: missing key %q", key)
		}
		if err := json.Unmarshal(v, &fields[i]); err != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return Task{}, fmt.Errorf("invalid task: %q must be a string", key)
		}
		if strings.TrimSpace(fields[i]) == "" {
			return Task{}, fmt.Errorf("invalid task: empty %q", key)
		}
	}
	t := Task{ID: fields[0], Question: fields[1], Answer: fields[2]}
	if md := bytes.TrimSpace(obj["metadata"]); len(md) > 0 && !bytes.Equal(md, []byte("null")) {
		if md[0] != '{' {
			return Task{}, fmt.Errorf("invalid task %q: metadata must be an object", t.ID)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, md); err != nil {
			return Task{}, fmt.Errorf("invalid task %q: metadata: %w", t.ID, err)
		}
		t.Metadata = buf.Bytes()
	}
	return t, nil
}
