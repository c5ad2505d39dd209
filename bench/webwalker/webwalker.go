// Package webwalker loads WebWalkerQA in both published layouts: the flattened JSON array of the
// WebThinker project (keys Question, answer, root_url, type, difficulty_level, lang, domain,
// source_website, golden_path) and the dataset hub's JSON Lines (question, answer, root_url and an info
// object holding the category fields). Keys are matched case-insensitively, so capitalised variants
// (Question, Root_Url, Info) load too.
package webwalker

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/bench"
)

// Load reads WebWalkerQA items from path (a .json array or JSON Lines, detected from the content)
// and applies f. Items without an id field get "ww-" and a hash of the question, so ids agree across
// the two layouts. Errors name the file and the row (array) or line (JSON Lines).
func Load(path string, f bench.Filter) ([]bench.Item, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webwalkerqa: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	var items []bench.Item
	if len(trimmed) > 0 && trimmed[0] == '[' {
		items, err = loadArray(path, trimmed)
	} else {
		items, err = loadLines(path, data)
	}
	if err != nil {
		return nil, err
	}
	dedupeIDs(items)
	out, err := f.Apply(items)
	if err != nil {
		return nil, fmt.Errorf("webwalkerqa %s: %w", path, err)
	}
	return out, nil
}

func loadArray(path string, data []byte) ([]bench.Item, error) {
	var rows []json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("webwalkerqa %s: %w", path, err)
	}
	items := make([]bench.Item, 0, len(rows))
	for i, raw := range rows {
		it, err := parseRow(raw)
		if err != nil {
			return nil, fmt.Errorf("webwalkerqa %s: row %d: %w", path, i+1, err)
		}
		items = append(items, it)
	}
	return items, nil
}

func loadLines(path string, data []byte) ([]bench.Item, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	var items []bench.Item
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			it, perr := parseRow(b)
			if perr != nil {
				return nil, fmt.Errorf("webwalkerqa %s:%d: %w", path, line, perr)
			}
			items = append(items, it)
		}
		if err == io.EOF {
			return items, nil
		}
		if err != nil {
			return nil, fmt.Errorf("webwalkerqa %s:%d: %w", path, line, err)
		}
	}
}

// parseRow decodes one question in either layout.
func parseRow(raw []byte) (bench.Item, error) {
	top, err := lowerKeys(raw)
	if err != nil {
		return bench.Item{}, err
	}
	info := map[string]json.RawMessage{}
	if in, ok := top["info"]; ok && string(bytes.TrimSpace(in)) != "null" {
		if info, err = lowerKeys(in); err != nil {
			return bench.Item{}, fmt.Errorf("info: %w", err)
		}
	}
	field := func(key string) json.RawMessage {
		if v, ok := info[key]; ok {
			return v
		}
		return top[key]
	}
	str := func(key string) (string, error) {
		s, err := bench.ScalarText(field(key))
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		return s, nil
	}
	it := bench.Item{Benchmark: bench.WebWalkerQA, Extra: map[string]any{}}
	for _, fd := range []struct {
		key string
		dst *string
	}{
		{"id", &it.ID}, {"question", &it.Question}, {"answer", &it.Answer}, {"type", &it.Type},
		{"difficulty_level", &it.Difficulty}, {"lang", &it.Lang}, {"domain", &it.Domain},
	} {
		if *fd.dst, err = str(fd.key); err != nil {
			return bench.Item{}, err
		}
	}
	if it.Question == "" {
		return bench.Item{}, fmt.Errorf("missing question")
	}
	if it.Answer == "" {
		return bench.Item{}, fmt.Errorf("missing answer")
	}
	if it.ID == "" {
		sum := sha256.Sum256([]byte(it.Question))
		it.ID = "ww-" + hex.EncodeToString(sum[:6])
	}
	for _, key := range []string{"root_url", "source_website", "golden_path"} {
		if v := field(key); len(v) > 0 {
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return bench.Item{}, fmt.Errorf("%s: %w", key, err)
			}
			it.Extra[key] = x
		}
	}
	return it, nil
}

// lowerKeys decodes a JSON object with its keys lowercased.
func lowerKeys(raw []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out, nil
}

// dedupeIDs suffixes repeated ids (a question published twice) with -2, -3, … in file order.
func dedupeIDs(items []bench.Item) {
	seen := map[string]int{}
	for i := range items {
		id := items[i].ID
		seen[id]++
		if n := seen[id]; n > 1 {
			items[i].ID = id + "-" + strconv.Itoa(n)
		}
	}
}
