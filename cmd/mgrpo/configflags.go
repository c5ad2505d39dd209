package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
)

// configFlags returns the flags of the configuration's keys in scopes, as
// run.Flags derives them from the configuration's tags: name, help and
// default come from there, never from a copy here.
func configFlags(scopes ...string) []cli.Flag {
	var flags []cli.Flag
	for _, f := range run.Flags(scopes...) {
		switch d := f.Default.(type) {
		case string:
			flags = append(flags, &cli.StringFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: d})
		case int:
			flags = append(flags, &cli.IntFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: d})
		case uint64:
			flags = append(flags, &cli.Uint64Flag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: d})
		case bool:
			flags = append(flags, &cli.BoolFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: d})
		case float64:
			flags = append(flags, &cli.Float64Flag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: d})
		case []string:
			flags = append(flags, &cli.StringSliceFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText})
		case time.Duration:
			flags = append(flags, &cli.DurationFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: d})
		case run.Timeout:
			flags = append(flags, &cli.GenericFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: &d})
		case run.Concurrency:
			flags = append(flags, &cli.GenericFlag{Name: f.Name, Usage: f.Usage, Category: f.Category, DefaultText: f.DefaultText, Value: &d})
		default:
			// A key of a new type needs its flag kind here; TestConfigFlags fails until then.
			panic(fmt.Sprintf("configuration flag --%s: no flag kind for %T", f.Name, f.Default))
		}
	}
	return flags
}

// overlayConfigFlags writes the configuration flags set on the command line
// over cfg (the YAML file's values, or the defaults).
func overlayConfigFlags(c *cli.Context, cfg *run.Config) error {
	for _, f := range run.Flags(run.ScopeAgent, run.ScopeFarm, run.ScopeTrain) {
		if !c.IsSet(f.Name) {
			continue
		}
		var v any
		switch f.Default.(type) {
		case string:
			v = c.String(f.Name)
		case int:
			v = c.Int(f.Name)
		case uint64:
			v = c.Uint64(f.Name)
		case bool:
			v = c.Bool(f.Name)
		case float64:
			v = c.Float64(f.Name)
		case []string:
			v = c.StringSlice(f.Name)
		case time.Duration:
			v = c.Duration(f.Name)
		case run.Timeout, run.Concurrency:
			v = c.Generic(f.Name)
		}
		if err := cfg.SetFlag(f.Name, v); err != nil {
			return usageError{err}
		}
	}
	return nil
}
