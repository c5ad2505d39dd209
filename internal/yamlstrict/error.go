package yamlstrict

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/token"
)

// DescribeError renders a YAML decoding error for a user: the line and
// column, the key, and what was wanted, in YAML's words, followed by the
// offending source lines. kinds names the value types that have a syntax
// of their own (a duration: "a duration such as 30s or 10m"). The library's own message names Go types and
// struct fields ("Go struct field Config.GroupSize of type int"), which mean
// nothing to someone editing a YAML file.
func DescribeError(err error, kinds map[reflect.Type]string) string {
	formatted := yaml.FormatError(err, false, true)
	var te *yaml.TypeError
	if !errors.As(err, &te) || te.Token == nil {
		return formatted
	}
	// FormatError puts the library's message on the first line and the
	// source excerpt after it; keep the excerpt.
	_, source, _ := strings.Cut(formatted, "\n")
	pos := te.Token.Position
	msg := fmt.Sprintf("line %d, column %d: ", pos.Line, pos.Column)
	if key := keyOf(te.Token); key != "" {
		msg += "key " + key + ": "
	}
	msg += fmt.Sprintf("want %s, got %s", yamlKind(te.DstType, kinds), yamlKind(te.SrcType, kinds))
	if source != "" {
		msg += "\n" + source
	}
	return msg
}

// keyOf returns the mapping key a value token belongs to: the token before
// the ':' that precedes the value.
func keyOf(t *token.Token) string {
	for p := t.Prev; p != nil; p = p.Prev {
		if p.Type == token.MappingValueType {
			if p.Prev != nil {
				return p.Prev.Value
			}
			return ""
		}
		if p.Position.Line < t.Position.Line-1 {
			return ""
		}
	}
	return ""
}

// yamlKind names a Go type as the kind of YAML value it takes, kinds'
// name first.
func yamlKind(t reflect.Type, kinds map[reflect.Type]string) string {
	if t == nil {
		return "a value"
	}
	if k, ok := kinds[t]; ok {
		return k
	}
	switch t.Kind() {
	case reflect.Pointer:
		return yamlKind(t.Elem(), kinds)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a value"
}
