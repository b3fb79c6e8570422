package events

// Usage-limit events (headless agents whose CLI reported a usage or rate
// limit).
const (
	// adapter, message, reset_at (RFC 3339, absent when the CLI gave
	// none), waiting (true: the run waits, --wait-limits), until (when the
	// wait ends), reason (why it does not wait, when it does not).
	AgentLimited = "agent.limited"
	// adapter: the wait is over; the agent's own session continues.
	AgentLimitResumed = "agent.limit_resumed"
)
