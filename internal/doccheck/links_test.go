package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches inline Markdown links and images: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

func TestDocLinksResolveInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "runs" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no Markdown files found")
	}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		inFence := false
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.HasPrefix(target, "#") {
					continue
				}
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					t.Errorf("%s:%d: link %q points outside the repository; link a file of docs/ instead", rel, n+1, target)
					continue
				}
				path, _, _ := strings.Cut(target, "#")
				abs := filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))
				if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("%s:%d: link %q leaves the repository", rel, n+1, target)
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s:%d: link %q does not resolve: %v", rel, n+1, target, err)
				}
			}
		}
	}
}
