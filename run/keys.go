package run

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/tools/search"
)

// docPlaceholders fill `doc` tags whose text comes from a registry, so that
// help texts list what the code accepts.
var docPlaceholders = strings.NewReplacer("{providers}", search.NameList())

// leafTypes are the struct types that hold one value, not keys.
var leafTypes = []reflect.Type{reflect.TypeFor[Duration](), reflect.TypeFor[Timeout]()}

// Keys lists every key of the configuration with its doc and, where a flag
// sets it, the flag: one "  key  doc (--flag)" line each, in file order, for
// help texts.
func Keys() []string {
	var keys []string
	// walk lists t's keys under prefix; flagPrefix is the parent's flag
	// ("" at the top, "-" when the parent has no flags), roleFlags whether
	// the parent's roleflag keys have their flags.
	var walk func(t reflect.Type, prefix, flagPrefix string, roleFlags bool)
	walk = func(t reflect.Type, prefix, flagPrefix string, roleFlags bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if key == "" {
				continue
			}
			flag := f.Tag.Get("flag")
			switch {
			case flag == "" && roleFlags && f.Tag.Get("roleflag") != "":
				flag = f.Tag.Get("roleflag")
			case flagPrefix == "-" || flag == "-":
				flag = "-"
			case flag != "" && flagPrefix != "":
				flag = flagPrefix + "-" + flag
			}
			if f.Type.Kind() == reflect.Struct && !slices.Contains(leafTypes, f.Type) {
				walk(f.Type, prefix+key+".", flag, f.Tag.Get("roleflags") == "true")
				continue
			}
			line := fmt.Sprintf("  %-28s %s", prefix+key, docPlaceholders.Replace(f.Tag.Get("doc")))
			if flag != "" && flag != "-" {
				line += " (--" + flag + ")"
			}
			keys = append(keys, line)
		}
	}
	walk(reflect.TypeOf(Config{}), "", "", false)
	return keys
}
