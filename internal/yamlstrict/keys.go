// Package yamlstrict reads YAML documents strictly for a person editing
// them: every unknown key at once, with its line, column and the closest
// known key, and decoding errors in YAML's words rather than Go's.
package yamlstrict

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/mgrpo/mgrpo/internal/didyoumean"
)

// UnknownKeys returns every key of a YAML document that dst's type has
// no field for, each with its line and column and the closest key that
// exists at that place, so that a file with several typos is reported
// whole (the decoder stops at the first). A document that does not parse
// returns nothing: the decoder reports it.
func UnknownKeys(data []byte, dst any) []string {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil
	}
	var out []string
	for _, doc := range file.Docs {
		walkYAMLKeys(doc.Body, reflect.TypeOf(dst), "", &out)
	}
	return out
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func walkYAMLKeys(n ast.Node, t reflect.Type, path string, out *[]string) {
	if n == nil || t == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // a scalar with its own syntax (durations, concurrency)
	}
	switch v := n.(type) {
	case *ast.AnchorNode:
		walkYAMLKeys(v.Value, t, path, out)
	case *ast.TagNode:
		walkYAMLKeys(v.Value, t, path, out)
	case *ast.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range v.Values {
				walkYAMLKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
	case *ast.MappingValueNode:
		walkMapping([]*ast.MappingValueNode{v}, t, path, out)
	case *ast.MappingNode:
		walkMapping(v.Values, t, path, out)
	}
}

func walkMapping(values []*ast.MappingValueNode, t reflect.Type, path string, out *[]string) {
	switch t.Kind() {
	case reflect.Map:
		for _, mv := range values {
			walkYAMLKeys(mv.Value, t.Elem(), path+"."+mv.Key.String(), out)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	fields := yamlFields(t)
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	for _, mv := range values {
		key := strings.Trim(mv.Key.String(), `"'`)
		if key == "<<" {
			continue // a merge key
		}
		full := strings.TrimPrefix(path+"."+key, ".")
		ft, ok := fields[key]
		if !ok {
			pos := mv.Key.GetToken().Position
			hint := ""
			if s := didyoumean.Suggest(key, names); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", strings.TrimPrefix(path+"."+s, "."))
			}
			*out = append(*out, fmt.Sprintf("line %d, column %d: unknown key %s%s", pos.Line, pos.Column, full, hint))
			continue
		}
		walkYAMLKeys(mv.Value, ft, full, out)
	}
}

// yamlFields maps a struct's YAML keys to their types, inlined structs'
// keys included.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}
