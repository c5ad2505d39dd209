package conftags

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// KeyDoc is one configuration key as help shows it.
type KeyDoc struct {
	// Key is dotted ("planner.model"); Doc its help; Default its default
	// as text ("" when there is nothing to say); Flag the flag that sets
	// it ("" when none).
	Key, Doc, Default, Flag string
	// Scope says which commands have the key's flag (see FlagSpec.Scope).
	Scope string
}

// KeyDocs lists every key of the configuration, in file order, for help.
func (s Schema) KeyDocs() []KeyDoc {
	var out []KeyDoc
	def := reflect.ValueOf(s.Default)
	for _, k := range s.keys() {
		out = append(out, KeyDoc{Key: k.key, Doc: placeholder.ReplaceAllString(k.doc, "$1"), Default: defaultText(k, def.FieldByIndex(k.index)), Flag: k.flag, Scope: k.scope})
	}
	return out
}

// Keys lists every key of the configuration with its doc, its default and,
// where a flag sets it, the flag: one "  key  doc (default: v) (--flag)"
// line each, in file order.
func (s Schema) Keys() []string {
	var lines []string
	for _, k := range s.KeyDocs() {
		line := fmt.Sprintf("  %-28s %s", k.Key, k.Doc)
		if k.Default != "" {
			line += " (default: " + k.Default + ")"
		}
		if k.Flag != "" {
			line += " (--" + k.Flag + ")"
		}
		lines = append(lines, line)
	}
	return lines
}

// defaultText is how a key's default reads in help: what its zero value
// stands for, or its value when it is not the zero value ("" when there is
// nothing to say).
func defaultText(k keyField, v reflect.Value) string {
	if v.IsZero() {
		return k.zero
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case yamlstrict.Duration:
		return x.Duration.String()
	case []string:
		return strings.Join(x, ",")
	case map[string]string:
		return ""
	}
	return fmt.Sprint(v.Interface())
}
