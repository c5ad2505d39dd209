// Command vocabgen writes the simulated tokenizer's corpus word list
// (sim/llm/vocab_corpus.txt): the words the simulated world actually
// writes, so that the sim's token counts are close to a real model's
// (about four bytes a token on English) instead of spelling every word
// the small hand-written vocabulary lacks in fragments and letters.
//
// A real tokenizer learns its pieces from a corpus; this one takes its
// words from three corpora of the sim world, each deterministic:
//   - the pages of sim webs (several seeds, with background paragraphs):
//     a word counts when it appears in lower case at least twice, or
//     capitalised in every sampled world, which keeps the generated names
//     of people, places and sites out (they change with the seed), as a
//     real tokenizer splits rare names;
//   - the agents' prompt templates (agents/prompts);
//   - the string literals of the simulated policy (sim/llm/policy) and the
//     tools (tools/...), whose text the model writes or reads in tool
//     descriptions.
//
// Run it with `go generate ./sim/llm` from the module; TestCorpusVocab
// checks the committed list is what it writes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/sim/llm/internal/vocabgen/corpus"
)

func main() {
	out := flag.String("out", "vocab_corpus.txt", "file to write")
	root := flag.String("root", "", "module root (default: the directory holding go.mod above the working directory)")
	flag.Parse()
	if *root == "" {
		r, err := moduleRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "vocabgen:", err)
			os.Exit(1)
		}
		*root = r
	}
	text, err := corpus.WordList(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vocabgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, text, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "vocabgen:", err)
		os.Exit(1)
	}
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory; pass -root")
		}
		dir = parent
	}
}
