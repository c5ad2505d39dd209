package rollout

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSampleFieldsMatchTheStruct checks that sampleFields lists every
// Sample field, in struct order, under its json tag's key: a field added to
// the struct without a row fails here by name.
func TestSampleFieldsMatchTheStruct(t *testing.T) {
	st := reflect.TypeFor[Sample]()
	for i := range max(st.NumField(), len(sampleFields)) {
		switch {
		case i >= len(sampleFields):
			f := st.Field(i)
			t.Errorf("Sample.%s (json %q) has no row in sampleFields: add one, in struct order, in samplefields.go", f.Name, jsonKey(f))
			continue
		case i >= st.NumField():
			t.Errorf("sampleFields row %q (key %q) names no Sample field", sampleFields[i].name, sampleFields[i].key)
			continue
		}
		f, row := st.Field(i), sampleFields[i]
		if f.Name != row.name || jsonKey(f) != row.key {
			t.Errorf("Sample field %d is %s (json %q), sampleFields row %d is %s (key %q): rows must follow the struct", i, f.Name, jsonKey(f), i, row.name, row.key)
		}
		if (row.part == partTokens) != (row.appendValue == nil) {
			t.Errorf("sampleFields row %s: token arrays, and only they, are written by appendTokenArrays", row.name)
		}
	}
}

func jsonKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return key
}

// entryType is a struct of an entry's members, built from Sample's fields,
// for encoding/json to encode as the reference.
var entryType = func() reflect.Type {
	fields := []reflect.StructField{{Name: "Seq", Type: reflect.TypeFor[int](), Tag: `json:"seq"`}}
	st := reflect.TypeFor[Sample]()
	for i, row := range sampleFields {
		if row.part == partEntry {
			fields = append(fields, st.Field(i))
		}
	}
	return reflect.StructOf(fields)
}()

// stdEntryJSON is encoding/json's encoding (HTML escaping off) of s's
// entry members.
func stdEntryJSON(seq int, s *Sample) ([]byte, error) {
	v := reflect.New(entryType).Elem()
	v.Field(0).SetInt(int64(seq))
	sv := reflect.ValueOf(s).Elem()
	for i := 1; i < v.NumField(); i++ {
		v.Field(i).Set(sv.FieldByName(entryType.Field(i).Name))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Addr().Interface()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func TestAppendSampleEntryJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var samples []Sample
	for _, str := range edgeStrings {
		samples = append(samples, Sample{QueryID: str, FinishReason: str})
	}
	for _, f := range edgeFloats {
		samples = append(samples, Sample{Reward: f, Advantage: -f})
	}
	for range 5000 {
		samples = append(samples, randomSample(rng, false))
	}
	for i := range samples {
		s := &samples[i]
		seq := rng.IntN(1000)
		want, werr := stdEntryJSON(seq, s)
		got, gerr := AppendSampleEntryJSON([]byte("x"), seq, s)
		switch {
		case (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()):
			t.Fatalf("sample %+v: AppendSampleEntryJSON error %v, encoding/json error %v", s, gerr, werr)
		case werr != nil && string(got) != "x":
			t.Fatalf("sample %+v: a failed AppendSampleEntryJSON left %q, want dst as given", s, got)
		case werr == nil && !bytes.Equal(got, append([]byte("x"), want...)):
			t.Fatalf("AppendSampleEntryJSON(%+v)\n got %s\nwant x%s", s, got, want)
		}
	}
}

func TestSampleEntryRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		s := randomSample(rng, true)
		if !utf8.ValidString(s.QueryID) || !utf8.ValidString(s.FinishReason) {
			// Invalid UTF-8 is replaced on encoding, as encoding/json does.
			s.QueryID, s.FinishReason = "q", "stop"
		}
		raw, err := AppendSampleEntryJSON(nil, 7, &s)
		if err != nil {
			t.Fatal(err)
		}
		var e SampleEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		got := e.Expand(s.Run, s.Step, s.Role, Tokens{InputIDs: s.InputIDs, LossMask: s.LossMask, Logprobs: s.Logprobs})
		again, _ := AppendSampleEntryJSON(nil, e.Seq, &got)
		if e.Seq != 7 || !bytes.Equal(raw, again) {
			t.Fatalf("entry %s decoded and encoded again is seq %d %s", raw, e.Seq, again)
		}
		if m, _ := e.MarshalJSON(); !bytes.Equal(m, raw) {
			t.Fatalf("MarshalJSON %s, AppendSampleEntryJSON %s", m, raw)
		}
	}
}

func TestSampleEntryRejectsOtherMembers(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"a batch member", `{"seq":1,"run":"r"}`, `json: unknown field "run"`},
		{"a token array", `{"seq":1,"input_ids":[1]}`, `json: unknown field "input_ids"`},
		{"an unknown member", `{"seq":1,"query":"q"}`, `json: unknown field "query"`},
		{"a wrong type", `{"seq":"1"}`, "cannot unmarshal"},
		{"not an object", `[1]`, "cannot unmarshal"},
		{"keys in another case", `{"SEQ":2,"Query_ID":"q","NUM_TURNS":3}`, ""},
		{"null", `null`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e SampleEntry
			err := json.Unmarshal([]byte(tc.in), &e)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("decode %s: %v", tc.in, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("decode %s: error %v, want one containing %q", tc.in, err, tc.err)
			}
		})
	}
	var e SampleEntry
	if err := json.Unmarshal([]byte(`{"SEQ":2,"Query_ID":"q","NUM_TURNS":3}`), &e); err != nil || e.Seq != 2 || e.Sample.QueryID != "q" || e.Sample.NumTurns != 3 {
		t.Errorf("keys in another case decode to %+v, %v", e, err)
	}
	if _, err := AppendSampleEntryJSON(nil, 0, &Sample{Reward: math.NaN()}); err == nil {
		t.Error("a NaN reward was encoded")
	}
}
