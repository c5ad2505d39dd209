package conftags

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// Keys lists every key of the configuration with its doc, its default and,
// where a flag sets it, the flag: one "  key  doc (default: v) (--flag)"
// line each, in file order, for help texts.
func (s Schema) Keys() []string {
	var lines []string
	def := reflect.ValueOf(s.Default)
	for _, k := range s.keys() {
		line := fmt.Sprintf("  %-28s %s", k.key, placeholder.ReplaceAllString(k.doc, "$1"))
		if d := defaultText(k, def.FieldByIndex(k.index)); d != "" {
			line += " (default: " + d + ")"
		}
		if k.flag != "" {
			line += " (--" + k.flag + ")"
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
