// Package mcp offers the tools of Model Context Protocol servers to the
// agents beside the built-in search and visit: each configured server
// (a command over stdio, or a Streamable HTTP URL) is reached through the
// official Go SDK, its allowed tools become tools.Tool values with the
// name, description and input schema the server lists, and every call
// becomes an observation like any other tool's (text content, other
// content summarised by type and size, capped; isError results as error
// observations classed tool_error; a call past its timeout cancelled and
// classed timeout).
//
// A Set owns the servers of a process: one session per server, shared by
// every rollout up to each tool's concurrency cap, started again with
// backoff after the server exits, closed with the Set.
package mcp
