package xbench

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/internal/benchtest"
)

// These tests never print decrypted text: only ids, counts and hashes.

func TestLoadSharedFiles(t *testing.T) {
	for _, name := range []string{"DeepSearch-2505.csv", "DeepSearch-2510.csv"} {
		t.Run(name, func(t *testing.T) {
			path := benchtest.SharedData(t, filepath.Join("xbench", name))
			items, err := Load(path, bench.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 100 {
				t.Fatalf("%s: %d rows, want 100", name, len(items))
			}
			hashes := map[string]bool{}
			for _, it := range items {
				if !it.Sensitive || it.Benchmark != bench.XBench {
					t.Fatalf("item %s not marked sensitive xbench", it.ID)
				}
				for field, s := range map[string]string{"prompt": it.Question, "answer": it.Answer} {
					if strings.TrimSpace(s) == "" || !utf8.ValidString(s) {
						t.Fatalf("item %s: %s empty or invalid UTF-8", it.ID, field)
					}
				}
				hashes[it.Hash()] = true
			}
			if len(hashes) != 100 {
				t.Errorf("%d distinct hashes, want 100", len(hashes))
			}
			t.Logf("%s: 100 rows decrypted; first id %s hash %s", name, items[0].ID, items[0].Hash())
		})
	}
}

func encrypt(plain, canary string) string {
	b := []byte(plain)
	for i := range b {
		b[i] ^= canary[i%len(canary)]
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestDecryptRoundTrip(t *testing.T) {
	for _, plain := range []string{"", "hello", "中文问题？", strings.Repeat("长", 100)} {
		got, err := Decrypt(encrypt(plain, "canary-key"), "canary-key")
		if err != nil || got != plain {
			t.Errorf("Decrypt(encrypt(%q)) = %q, %v", plain, got, err)
		}
	}
	if _, err := Decrypt("!!!", "k"); err == nil {
		t.Error("bad base64: want an error")
	}
	if _, err := Decrypt(encrypt("中文", "k1"), "zz"); err == nil {
		t.Error("wrong canary: want an invalid-UTF-8 error")
	}
}

func TestLoadSyntheticAndErrors(t *testing.T) {
	dir := t.TempDir()
	good := "\ufeffid,prompt,answer,reference_steps,canary\n" +
		"7," + encrypt("问题一", "c1") + "," + encrypt("答案", "c1") + ",," + "c1\n"
	p := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(p, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	items, err := Load(p, bench.Filter{})
	if err != nil || len(items) != 1 || items[0].ID != "7" || items[0].Question != "问题一" || items[0].Answer != "答案" {
		t.Fatalf("Load = %+v, %v", items, err)
	}
	bad := "id,prompt,answer,reference_steps,canary\n" +
		"1," + encrypt("q", "c") + "," + encrypt("a", "c") + ",,c\n" +
		"2,@@@," + encrypt("a", "c") + ",,c\n"
	p = filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, bench.Filter{}); err == nil || !strings.Contains(err.Error(), "row 3 (id 2): prompt") {
		t.Errorf("error = %v, want row 3 named", err)
	}
	p = filepath.Join(dir, "nohdr.csv")
	if err := os.WriteFile(p, []byte("id,question\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, bench.Filter{}); err == nil || !strings.Contains(err.Error(), "prompt") {
		t.Errorf("error = %v, want missing column named", err)
	}
}
