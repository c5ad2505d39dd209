package yamldiff

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// Shown is how a differing configuration value reads in a message (a Show
// for Diff): strings quoted, URLs without their credentials, durations as
// durations, a nil pointer as unset.
func Shown(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case yamlstrict.Duration:
		return x.Duration.String()
	case string:
		return fmt.Sprintf("%q", redact.URL(x))
	case []string:
		shown := make([]string, len(x))
		for i, s := range x {
			shown[i] = redact.URL(s)
		}
		return fmt.Sprintf("%q", strings.Join(shown, ","))
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return "unset"
	}
	return fmt.Sprint(reflect.Indirect(v).Interface())
}
