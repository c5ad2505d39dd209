package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/outfile"
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
// removed (outfile.Write). A path that cannot be created is a
// configuration error naming --out.
func WriteOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	err := outfile.Write(path, stdout, write)
	if errors.Is(err, outfile.ErrCreate) {
		return invalid(fmt.Errorf("--out: %w", err))
	}
	return err
}
