package stack

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/mgrpo/mgrpo/tools/search"
)

// docPlaceholders fill `doc` tags whose text comes from a registry, so that
// help texts list what the code accepts.
var docPlaceholders = strings.NewReplacer("{providers}", search.NameList())

// Keys lists every key of the configuration with its doc and, where a flag
// sets it, the flag: one "  key  doc (--flag)" line each, in file order, for
// help texts.
func Keys() []string {
	var keys []string
	// walk lists t's keys under prefix; flagPrefix is the parent's flag
	// ("" at the top, "-" when the parent has no flags).
	var walk func(t reflect.Type, prefix, flagPrefix string)
	walk = func(t reflect.Type, prefix, flagPrefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if key == "" {
				continue
			}
			flag := f.Tag.Get("flag")
			switch {
			case flagPrefix == "-" || flag == "-":
				flag = "-"
			case flag != "" && flagPrefix != "":
				flag = flagPrefix + "-" + flag
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Duration{}) {
				walk(f.Type, prefix+key+".", flag)
				continue
			}
			line := fmt.Sprintf("  %-28s %s", prefix+key, docPlaceholders.Replace(f.Tag.Get("doc")))
			if flag != "" && flag != "-" {
				line += " (--" + flag + ")"
			}
			keys = append(keys, line)
		}
	}
	walk(reflect.TypeOf(Config{}), "", "")
	return keys
}
