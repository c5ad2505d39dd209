// Package doccheck holds the tests that keep the repository's documentation
// true: every Markdown link resolves to a file inside the repository, so a
// user who clones it needs nothing else to read the docs; and every mgrpo
// command line in README.md, docs/*.md and examples/* names commands,
// subcommands and flags the CLI has, as its --help lists them.
package doccheck
