package run

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/sim"
	"github.com/mgrpo/mgrpo/sim/web"
)

// loadTasks reads the configured task file, or with the simulated world
// and no file takes the sim web's questions; it returns them with a name
// for messages.
func loadTasks(cfg Config, world *sim.World) ([]farm.Task, string, error) {
	if cfg.Tasks == "" {
		tasks, err := SimTasks(world)
		return tasks, "the sim web's questions", err
	}
	tasks, err := farm.LoadTasks(cfg.Tasks)
	if err != nil {
		return nil, "", fmt.Errorf("%w: --tasks: %w", ErrConfig, err)
	}
	return tasks, cfg.Tasks, nil
}

// WriteSimTasks writes the sim web's questions to path in a task format
// (jsonl, gaia, webwalkerqa), creating its directory; a file that cannot be
// written completely is removed.
func WriteSimTasks(w *sim.World, path, format string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write sim tasks: %w", err)
	}
	return WriteOut(path, nil, func(out io.Writer) error { return web.WriteTasks(out, w.Web.Questions, format) })
}

// WriteOut runs write on path ("-" is stdout), buffered, and reports errors
// of the final flush and close too; a file whose write did not complete is
// removed. A path that cannot be created is a configuration error naming
// --out.
func WriteOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	f, err := os.Create(path)
	if err != nil {
		return invalid(fmt.Errorf("--out: %w", err))
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
