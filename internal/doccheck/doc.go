// Package doccheck holds the test that keeps the repository's Markdown
// documentation self-contained: every link resolves to a file inside the
// repository, so a user who clones it needs nothing else to read the docs.
package doccheck
