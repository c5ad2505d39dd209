// Package tinkerpb holds the Go types of the Tinker API's public protobuf
// messages (package tinker_public), generated from tinker_public.proto by
// protoc and protoc-gen-go. It imports google.golang.org/protobuf only; the
// sim trainer does not use it (it decodes the same wire with its own code,
// so that a wrong field number here shows up as a failed conformance test
// rather than as two sides agreeing on a mistake).
package tinkerpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative tinker_public.proto
