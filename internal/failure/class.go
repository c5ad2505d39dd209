// Package failure names the kinds of failure the project records: short,
// stable strings that appear in trajectories, in step files and as metric
// labels. It imports nothing, so the tools that classify failures, the
// agents and the farm that record them and the pure rollout layer whose
// records hold them can all use the same values.
package failure

// Class is the kind of failure of a tool call, short and stable, used in
// observation metadata and as a metric label. The empty Class means success.
type Class string

// The failure classes of tool calls.
const (
	ClassOK          Class = ""
	ClassInvalidArgs Class = "invalid_args"
	ClassRefused     Class = "refused"
	ClassTimeout     Class = "timeout"
	ClassCanceled    Class = "canceled"
	ClassRateLimited Class = "rate_limited"
	ClassAuth        Class = "auth"
	ClassClient      Class = "http_4xx"
	ClassServer      Class = "http_5xx"
	ClassNetwork     Class = "network"
	ClassDecode      Class = "decode"
	ClassUnsupported Class = "unsupported"
	ClassConfig      Class = "config"
	ClassInternal    Class = "internal"
	// ClassToolError is a tool that ran and reported that it failed (an
	// MCP result with isError, or a JSON-RPC error answering the call).
	ClassToolError Class = "tool_error"
)
