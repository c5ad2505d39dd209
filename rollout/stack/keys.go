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

// Keys lists every key of the configuration with its doc, one
// "  key  doc" line each, in file order, for help texts.
func Keys() []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if key == "" {
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Duration{}) {
				walk(f.Type, prefix+key+".")
				continue
			}
			keys = append(keys, fmt.Sprintf("  %-28s %s", prefix+key, docPlaceholders.Replace(f.Tag.Get("doc"))))
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return keys
}
