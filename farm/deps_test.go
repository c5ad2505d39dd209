package farm

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestFarmDoesNotImportRemote checks that the farm runtime names the
// failure classes of tool calls from the leaf package internal/failure, not
// from the tools' HTTP layer.
func TestFarmDoesNotImportRemote(t *testing.T) {
	depcheck.ForbidImports(t, ".", []string{"tools/remote/..."},
		"the failure classes are in internal/failure")
}
