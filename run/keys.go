package run

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/tools/search"
)

// docPlaceholders fill `doc` tags whose text comes from a registry, so that
// help texts list what the code accepts.
var docPlaceholders = strings.NewReplacer("{providers}", search.NameList())

// placeholder matches a doc's placeholder of a flag's value, {{NAME}}: the
// flag's help shows it as the value's name, the keys' list as plain text.
var placeholder = regexp.MustCompile(`\{\{([^}]+)\}\}`)

// leafTypes are the struct types that hold one value, not keys.
var leafTypes = []reflect.Type{reflect.TypeFor[Duration](), reflect.TypeFor[Timeout](), reflect.TypeFor[Concurrency]()}

// keyField is one key of the configuration as its tags describe it.
type keyField struct {
	// key is the dotted YAML key, doc its help text (placeholders filled).
	key, doc string
	// flag is the flag that sets it ("" when none), role the endpoint
	// role ("planner", …) when the flag is a role flag that sets the key
	// of several roles at once.
	flag, role string
	// opts are the flag tag's options after its name (split, append).
	opts []string
	// scope says which commands have the flag (see FlagSpec.Scope),
	// category where its help lists it (see FlagSpec.Category).
	scope, category string
	// zero says what the zero value stands for (a `zero` tag: "0.2" for a
	// clip that the trainer defaults), shown as the key's default.
	zero string
	// index is the field's index path in Config.
	index []int
	typ   reflect.Type
}

// configKeys lists every key of Config in file order. In a nested struct
// a key's flag is the parent's flag, a dash and the field's ("planner" +
// "url": --planner-url); a parent tagged flag:"-" has no flags for its
// keys; a parent without a flag tag leaves its keys' flags as they are. A
// `roleflag` tag names a flag that sets the key of every role whose field
// is tagged roleflags:"true" (--dialect sets planner.dialect and
// executor.dialect). A `scope` tag, inherited by nested keys, says which
// commands have the flag (default ScopeAgent).
func configKeys() []keyField {
	var keys []keyField
	var walk func(t reflect.Type, index []int, prefix, flagPrefix, role, scope, category string, roleFlags bool)
	walk = func(t reflect.Type, index []int, prefix, flagPrefix, role, scope, category string, roleFlags bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if key == "" {
				continue
			}
			flagName, opts, _ := strings.Cut(f.Tag.Get("flag"), ",")
			fieldRole := ""
			switch {
			case flagName == "" && roleFlags && f.Tag.Get("roleflag") != "":
				flagName, fieldRole = f.Tag.Get("roleflag"), role
			case flagPrefix == "-" || flagName == "-":
				flagName = "-"
			case flagName != "" && flagPrefix != "":
				flagName = flagPrefix + "-" + flagName
			}
			fieldScope, fieldCategory := scope, category
			if s := f.Tag.Get("scope"); s != "" {
				fieldScope = s
			}
			if c := f.Tag.Get("category"); c != "" {
				fieldCategory = c
			}
			idx := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct && !slices.Contains(leafTypes, f.Type) {
				walk(f.Type, idx, prefix+key+".", flagName, key, fieldScope, fieldCategory, f.Tag.Get("roleflags") == "true")
				continue
			}
			kf := keyField{key: prefix + key, doc: docPlaceholders.Replace(f.Tag.Get("doc")), role: fieldRole,
				scope: fieldScope, category: fieldCategory, zero: f.Tag.Get("zero"), index: idx, typ: f.Type}
			if flagName != "-" {
				kf.flag = flagName
			}
			if opts != "" {
				kf.opts = strings.Split(opts, ",")
			}
			keys = append(keys, kf)
		}
	}
	walk(reflect.TypeFor[Config](), nil, "", "", "", ScopeAgent, "", false)
	return keys
}

// KeyDoc is one configuration key as help shows it.
type KeyDoc struct {
	// Key is dotted ("planner.model"); Doc its help; Default its default
	// as text ("" when there is nothing to say); Flag the flag that sets
	// it ("" when none).
	Key, Doc, Default, Flag string
	// Scope says which commands have the key's flag (ScopeAgent, …).
	Scope string
}

// KeyDocs lists every key of the configuration, in file order, for help.
func KeyDocs() []KeyDoc {
	var out []KeyDoc
	def := reflect.ValueOf(DefaultConfig())
	for _, k := range configKeys() {
		out = append(out, KeyDoc{Key: k.key, Doc: placeholder.ReplaceAllString(k.doc, "$1"), Default: defaultText(k, def.FieldByIndex(k.index)), Flag: k.flag, Scope: k.scope})
	}
	return out
}

// Keys lists every key of the configuration with its doc, its default and,
// where a flag sets it, the flag: one "  key  doc (default: v) (--flag)"
// line each, in file order.
func Keys() []string {
	var lines []string
	for _, k := range KeyDocs() {
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
	case Duration:
		return x.Duration.String()
	case []string:
		return strings.Join(x, ",")
	case map[string]string:
		return ""
	}
	return fmt.Sprint(v.Interface())
}
