// Package rollouttest holds what the tests of every codec of rollout's
// records share: a Sample whose every field holds a distinct non-zero value,
// found by reflection, and a field-by-field comparison naming what a codec
// dropped or renamed. Each package that encodes Samples (rollout's step
// files, the store's sequences, the trainer backends) round-trips
// FilledSample and checks it with CheckRoundTrip, so a new Sample field that
// one codec misses fails that codec's test by name.
package rollouttest

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TokenLen is the length of FilledSample's token arrays.
const TokenLen = 3

// FilledSample returns a Sample whose every field, nested ones included,
// holds a distinct non-zero value: strings name their field, numbers count
// up from 1 (floats with a fraction), booleans are true, pointers point at
// filled values and slices hold TokenLen filled elements, so the token
// arrays have equal lengths. Role is rollout.RoleExecutor, a role every
// backend accepts. A field of a kind it cannot fill fails tb, naming it.
func FilledSample(tb testing.TB) rollout.Sample {
	tb.Helper()
	var s rollout.Sample
	f := filler{tb: tb}
	f.fill("Sample", reflect.ValueOf(&s).Elem())
	s.Role = rollout.RoleExecutor
	return s
}

// filler fills values with distinct counts.
type filler struct {
	tb testing.TB
	n  int
}

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(path string, v reflect.Value) {
	f.tb.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(path + "-" + strconv.Itoa(f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Int8:
		v.SetInt(int64(f.next() % math.MaxInt8))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(-float64(f.next()) - 0.25)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(path, p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), TokenLen, TokenLen)
		for i := range TokenLen {
			f.fill(path, s.Index(i))
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			f.fill(path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	default:
		f.tb.Fatalf("rollouttest.FilledSample cannot fill %s of kind %s: teach it", path, v.Kind())
	}
}

// Fields returns the names of Sample's fields, in struct order.
func Fields() []string {
	t := reflect.TypeFor[rollout.Sample]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = t.Field(i).Name
	}
	return out
}

// DiffFields returns the names of the fields of want that got does not hold
// equal (floats compared bit for bit), in struct order; only names in only
// are compared when only is not empty.
func DiffFields(want, got rollout.Sample, only ...string) []string {
	w, g := reflect.ValueOf(want), reflect.ValueOf(got)
	var out []string
	for i := range w.NumField() {
		name := w.Type().Field(i).Name
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		if !equalBits(w.Field(i), g.Field(i)) {
			out = append(out, name)
		}
	}
	return out
}

// CheckRoundTrip fails tb once for every field of want that got, the
// sample decoded from codec's encoding of want, does not hold: the codec
// dropped or renamed it. With only, just those fields are checked.
func CheckRoundTrip(tb testing.TB, codec string, want, got rollout.Sample, only ...string) {
	tb.Helper()
	for _, name := range DiffFields(want, got, only...) {
		w := reflect.ValueOf(want).FieldByName(name)
		g := reflect.ValueOf(got).FieldByName(name)
		tb.Errorf("%s drops or renames Sample.%s: encoded %v, decoded %v", codec, name, show(w), show(g))
	}
}

func show(v reflect.Value) any {
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return v.Elem().Interface()
	}
	return v.Interface()
}

// equalBits is reflect.DeepEqual comparing floats by their bits.
func equalBits(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalBits(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalBits(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalBits(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
