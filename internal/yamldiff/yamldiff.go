// Package yamldiff lists the keys at which two values of one struct type
// differ, named by their dotted YAML keys, so that a refusal can say which
// setting changed and how instead of only that one did.
package yamldiff

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
)

// Change is one key whose values differ: Key is dotted ("planner.model"),
// Old and New the values as they read in a message.
type Change struct {
	Key, Old, New string
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// Diff returns the keys of a and b (values of the same struct type) whose
// values differ, in field order. Nested structs are walked; a struct that
// parses itself from text (a duration) is one value; fields without a
// YAML key or tagged "-" are skipped. Show, when set, renders each value
// (to redact URLs); nil formats with fmt.
func Diff(a, b any, show func(reflect.Value) string) []Change {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		panic(fmt.Sprintf("yamldiff: %v and %v", va.Type(), vb.Type()))
	}
	if show == nil {
		show = func(v reflect.Value) string { return fmt.Sprint(v.Interface()) }
	}
	var out []Change
	walk(va, vb, "", show, &out)
	return out
}

func walk(a, b reflect.Value, prefix string, show func(reflect.Value) string, out *[]Change) {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if !f.IsExported() || key == "" || key == "-" {
			continue
		}
		x, y := a.Field(i), b.Field(i)
		if f.Type.Kind() == reflect.Struct && !reflect.PointerTo(f.Type).Implements(textUnmarshaler) {
			walk(x, y, prefix+key+".", show, out)
			continue
		}
		if !reflect.DeepEqual(x.Interface(), y.Interface()) {
			*out = append(*out, Change{Key: prefix + key, Old: show(x), New: show(y)})
		}
	}
}
