// Package conftags derives a configuration's keys, help and command-line
// flags from its struct tags, so that a key's YAML name, flag, help text,
// default and scope have one source. The tags: `yaml` names the key;
// `flag` names its flag (in a nested struct the parent's flag, a dash and
// the field's: "planner" + "url" is --planner-url; a parent tagged
// flag:"-" has no flags for its keys; `,split` and `,append` options for
// lists); `roleflag` names a flag that sets the key of every role whose
// field is tagged roleflags:"true"; `doc` is the help text ({{WORD}} names
// the flag's value); `zero` says what the zero value stands for; `scope`
// and `category` (inherited by nested keys) say which commands have the
// flag and where help lists it.
package conftags

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Schema is a configuration struct as its tags describe it.
type Schema struct {
	// Default is the configuration's default value (a struct, not a
	// pointer): its type is walked, its values are the keys' defaults.
	Default any
	// Leaves are the struct types that hold one value, not keys.
	Leaves []reflect.Type
	// Doc fills the placeholders of doc tags whose text comes from a
	// registry (nil: the tags as written).
	Doc func(string) string
	// Scope is the scope of keys without a scope tag.
	Scope string
	// Categories are the headings of the flags in help, in order.
	Categories []Category
	// IsRole reports whether a top-level key is an endpoint role's, whose
	// flags' help names the role.
	IsRole func(key string) bool
}

// Category is a heading of flags in help: Key names it in `category`
// tags, Title is how help shows it.
type Category struct{ Key, Title string }

// placeholder matches a doc's placeholder of a flag's value, {{NAME}}: the
// flag's help shows it as the value's name, the keys' list as plain text.
var placeholder = regexp.MustCompile(`\{\{([^}]+)\}\}`)

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
	// index is the field's index path in the configuration.
	index []int
	typ   reflect.Type
}

// keys lists every key of the configuration in file order.
func (s Schema) keys() []keyField {
	var keys []keyField
	doc := s.Doc
	if doc == nil {
		doc = func(d string) string { return d }
	}
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
			if f.Type.Kind() == reflect.Struct && !slices.Contains(s.Leaves, f.Type) {
				walk(f.Type, idx, prefix+key+".", flagName, key, fieldScope, fieldCategory, f.Tag.Get("roleflags") == "true")
				continue
			}
			kf := keyField{key: prefix + key, doc: doc(f.Tag.Get("doc")), role: fieldRole,
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
	walk(reflect.TypeOf(s.Default), nil, "", "", "", s.Scope, "", false)
	return keys
}
