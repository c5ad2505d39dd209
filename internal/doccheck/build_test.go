package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the mgrpo binary the package's tests share; TestMain
// removes it.
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
	binOut   []byte
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// mgrpoBinary builds ./cmd/mgrpo once for the package's tests and returns
// its path.
func mgrpoBinary(t *testing.T, root string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot build mgrpo")
	}
	binOnce.Do(func() {
		binDir, binError = os.MkdirTemp("", "doccheck-mgrpo-")
		if binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "mgrpo")
		build := exec.Command(gobin, "build", "-o", binPath, "./cmd/mgrpo")
		build.Dir = root
		binOut, binError = build.CombinedOutput()
	})
	if binError != nil {
		t.Fatalf("go build ./cmd/mgrpo: %v\n%s", binError, binOut)
	}
	return binPath
}
