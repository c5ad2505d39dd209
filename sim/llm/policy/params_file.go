package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// paramsFile is the JSON layout of a params file:
//
//	{"format": "mgrpo-sim-policy-params/v1",
//	 "roles": {"planner": {"guess": [bias, turn, calls], …},
//	           "executor": {"pick": [best.bias, best.turn, relevance], …}}}
//
// Every role and decision of the layout must be present with exactly its
// length (BlockNames gives each entry's name); nothing else may be.
type paramsFile struct {
	Format string                          `json:"format"`
	Roles  map[string]map[string][]float64 `json:"roles"`
}

// MarshalJSON writes p in the params file format.
func (p *Params) MarshalJSON() ([]byte, error) {
	f := paramsFile{Format: ParamsFormat, Roles: map[string]map[string][]float64{}}
	for _, b := range paramLayout {
		r := f.Roles[string(b.role)]
		if r == nil {
			r = map[string][]float64{}
			f.Roles[string(b.role)] = r
		}
		r[string(b.kind)] = slices.Clone(p.v[b.offset : b.offset+len(b.names)])
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads the params file format, refusing a file of another
// format or shape (see ParseParams).
func (p *Params) UnmarshalJSON(data []byte) error {
	q, err := ParseParams(data)
	if err != nil {
		return err
	}
	*p = *q
	return nil
}

// ParseParams reads a params file's bytes. It refuses another format tag, a
// missing or unknown role or decision, a vector of the wrong length (naming
// the role, the decision and the length expected) and non-finite entries.
func ParseParams(data []byte) (*Params, error) {
	var f paramsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	if f.Format != ParamsFormat {
		return nil, fmt.Errorf("params: format %q, want %q", f.Format, ParamsFormat)
	}
	v := make([]float64, paramLen())
	var errs []error
	seen := map[string]bool{}
	for _, b := range paramLayout {
		key := string(b.role) + "." + string(b.kind)
		seen[key] = true
		vec, ok := f.Roles[string(b.role)][string(b.kind)]
		if !ok {
			errs = append(errs, fmt.Errorf("params: roles.%s.%s is missing (want %d entries: %s)", b.role, b.kind, len(b.names), strings.Join(b.names, ", ")))
			continue
		}
		if len(vec) != len(b.names) {
			errs = append(errs, fmt.Errorf("params: roles.%s.%s has %d entries, want %d (%s)", b.role, b.kind, len(vec), len(b.names), strings.Join(b.names, ", ")))
			continue
		}
		for i, x := range vec {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				errs = append(errs, fmt.Errorf("params: roles.%s.%s[%d] (%s) = %v: must be finite", b.role, b.kind, i, b.names[i], x))
			}
		}
		copy(v[b.offset:], vec)
	}
	for role, kinds := range f.Roles {
		for kind := range kinds {
			if !seen[role+"."+kind] {
				errs = append(errs, fmt.Errorf("params: roles.%s.%s is not a decision of the policy", role, kind))
			}
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, errors.Join(errs...)
	}
	return &Params{v: v}, nil
}

// ReadParams reads a params file from path.
func ReadParams(path string) (*Params, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read params: %w", err)
	}
	p, err := ParseParams(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Write writes p to w in the params file format, indented, with a final
// newline.
func (p *Params) Write(w io.Writer) error {
	js, err := p.MarshalJSON()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, js, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err = w.Write(b.Bytes())
	return err
}

// WriteFile writes p to path (created or truncated, mode 0644).
func (p *Params) WriteFile(path string) error {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write params: %w", err)
	}
	return nil
}
