package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ScalarText renders a JSON string or number as text, as the dataset
// loaders need for fields that files write either way (GAIA's Level, ids);
// null or absent is empty, anything else an error.
func ScalarText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("want a string or a number, got %.40s", raw)
	}
	return n.String(), nil
}
