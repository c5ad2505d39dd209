package gaia

import (
	"fmt"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// readParquet reads metadata.parquet generically (column types vary between releases: Level is an
// integer or a string) into records.
func readParquet(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gaia: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gaia: %w", err)
	}
	rows, err := parquet.Read[any](f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("gaia %s: %w", path, err)
	}
	out := make([]record, 0, len(rows))
	for i, row := range rows {
		where := fmt.Sprintf("gaia %s: row %d", path, i+1)
		m, ok := row.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected row type %T", where, row)
		}
		var r record
		fields := []struct {
			key string
			dst *string
		}{
			{"task_id", &r.TaskID}, {"Question", &r.Question}, {"Level", &r.Level},
			{"Final answer", &r.Answer}, {"file_name", &r.FileName},
		}
		for _, fd := range fields {
			s, err := text(m[fd.key])
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", where, fd.key, err)
			}
			*fd.dst = s
		}
		r.Annotator = m["Annotator Metadata"]
		if err := r.check(where); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// text renders a parquet scalar as text.
func text(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), nil
	default:
		return "", fmt.Errorf("want a string or a number, got %T", v)
	}
}
