package agents

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestAgentsDoNotImportRemote checks that the agents name the failure
// classes of tool calls from the leaf package internal/failure, not from
// the tools' HTTP layer.
func TestAgentsDoNotImportRemote(t *testing.T) {
	depcheck.ForbidImports(t, "./...", []string{"tools/remote/..."},
		"the failure classes are in internal/failure")
}
