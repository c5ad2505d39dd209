package problems

import "fmt"

// Name says how a user sets a configuration key: "group_size
// (--group-size)", or the key alone when no flag sets it.
func Name(key, flag string) string {
	if flag == "" {
		return key
	}
	return key + " (--" + flag + ")"
}

// List collects a configuration's problems, each naming the key (and the
// flag) that sets what is wrong, so that each section of a configuration
// can check itself and the caller reports every problem at once.
type List []error

// Add adds the problem of key (set by flag, "" for none): format and args
// say what is wrong and how to fix it.
func (l *List) Add(key, flag, format string, args ...any) {
	*l = append(*l, fmt.Errorf("%s: %s", Name(key, flag), fmt.Sprintf(format, args...)))
}
