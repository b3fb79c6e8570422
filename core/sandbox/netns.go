package sandbox

// Start runs start, which starts the plan's process (a fork and exec on
// the calling goroutine), so that the process begins in the plan's
// network namespace (Netns), where there is one: the session's, which
// the process joins without a program of its own before bwrap (nsenter
// was one more exec, about a third of what the sandbox added to a step).
// Without a namespace, or on a nil plan, it is start().
func (p *Plan) Start(start func() error) error {
	if p == nil || p.Netns == nil {
		return start()
	}
	return startIn(p.Netns, start)
}
