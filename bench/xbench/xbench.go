// Package xbench loads xbench-DeepSearch CSV files (columns id, prompt, answer, reference_steps,
// canary), decrypting prompt and answer in memory: each is base64 of the text XOR-ed with the row's
// canary as a repeating key. The plain text must never be written out; items are marked Sensitive and
// results carry the id and Item.Hash only.
package xbench

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/mgrpo/mgrpo/bench"
)

// Decrypt reverses xbench's encryption: base64-decode field, then XOR every byte with the canary's
// UTF-8 bytes used as a repeating key. The result must be valid UTF-8.
func Decrypt(field, canary string) (string, error) {
	if canary == "" {
		return "", errors.New("empty canary")
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(field))
	if err != nil {
		return "", fmt.Errorf("base64: %w", err)
	}
	key := []byte(canary)
	for i := range data {
		data[i] ^= key[i%len(key)]
	}
	if !utf8.Valid(data) {
		return "", errors.New("decrypted text is not valid UTF-8 (wrong canary?)")
	}
	return string(data), nil
}

// Load reads an xbench-DeepSearch CSV and applies f. Errors name the file and the CSV row (the
// header is row 1) but never quote decrypted text.
func Load(path string, f bench.Filter) ([]bench.Item, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("xbench: %w", err)
	}
	items, err := parse(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))), path)
	if err != nil {
		return nil, err
	}
	out, err := f.Apply(items)
	if err != nil {
		return nil, fmt.Errorf("xbench %s: %w", path, err)
	}
	return out, nil
}

func parse(r io.Reader, path string) ([]bench.Item, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("xbench %s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"id", "prompt", "answer", "canary"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("xbench %s: header lacks column %q", path, need)
		}
	}
	var items []bench.Item
	seen := map[string]bool{}
	for row := 2; ; row++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return items, nil
		}
		if err != nil {
			return nil, fmt.Errorf("xbench %s: %w", path, err)
		}
		get := func(name string) string { return rec[col[name]] }
		id := strings.TrimSpace(get("id"))
		if id == "" {
			return nil, fmt.Errorf("xbench %s: row %d: empty id", path, row)
		}
		if seen[id] {
			return nil, fmt.Errorf("xbench %s: row %d: duplicate id %s", path, row, id)
		}
		seen[id] = true
		canary := get("canary")
		it := bench.Item{ID: id, Benchmark: bench.XBench, Lang: "zh", Sensitive: true}
		if it.Question, err = Decrypt(get("prompt"), canary); err != nil {
			return nil, fmt.Errorf("xbench %s: row %d (id %s): prompt: %w", path, row, id, err)
		}
		if it.Answer, err = Decrypt(get("answer"), canary); err != nil {
			return nil, fmt.Errorf("xbench %s: row %d (id %s): answer: %w", path, row, id, err)
		}
		if strings.TrimSpace(it.Question) == "" || strings.TrimSpace(it.Answer) == "" {
			return nil, fmt.Errorf("xbench %s: row %d (id %s): empty prompt or answer", path, row, id)
		}
		items = append(items, it)
	}
}
