// Package backends registers every trainer backend with trainerbridge.Open:
// importing it makes tinker+http(s)://, http(s):// and file:// trainer URLs
// work. It is the one place that knows every backend.
package backends

import (
	// Each registers its URL schemes in its init.
	_ "github.com/mgrpo/mgrpo/trainer_bridge/files"
	_ "github.com/mgrpo/mgrpo/trainer_bridge/httptrainer"
	_ "github.com/mgrpo/mgrpo/trainer_bridge/tinker"
)
