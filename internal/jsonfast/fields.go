package jsonfast

import (
	"reflect"
	"strings"
)

// FieldNames lists the member names of struct type t as encoding/json sees
// them: tag names or field names, embedded structs flattened. It may list
// more names than encoding/json uses (shadowed fields), never fewer, which
// only makes a fast decoder checking keys against them more cautious.
func FieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && ft.Kind() == reflect.Struct && name == "" {
			names = append(names, FieldNames(ft)...)
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// FoldsTo reports whether key, an ASCII member name (see Scanner.Key), is
// none of names but matches one of them the way encoding/json matches keys
// to fields (ASCII case folding): a key that would fill a field a fast
// decoder fills only under its exact name.
func FoldsTo(key []byte, names []string) bool {
	for _, n := range names {
		if len(n) == len(key) && string(key) != n && strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}
