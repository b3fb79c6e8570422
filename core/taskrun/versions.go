package taskrun

import (
	"fmt"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/workflow"
)

var (
	warnedMu sync.Mutex
	warned   = map[string]bool{} // session id + adapter: untested version reported
)

// warnUntested reports, once per session and adapter, that the task's CLI
// is not the version its adapter was tested with (newer or older), as a
// warning the run prints on stderr. The version is asked once per process,
// aside (gemini takes 2 s to print it), while the task runs; the function
// returned waits for the answer when the task ends first, so the warning is
// never lost nor emitted after the task.
func warnUntested(host Host, cfg Settings, t workflow.Task) (wait func()) {
	if cfg.Registry == nil {
		return func() {}
	}
	if vc := cfg.Registry.VersionCheck(t.Adapter); vc == nil || vc.Tested == "" {
		return func() {}
	}
	key := cfg.SessionID + "\x00" + t.Adapter
	warnedMu.Lock()
	done := warned[key]
	warned[key] = true
	warnedMu.Unlock()
	if done {
		return func() {}
	}
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		v := cfg.Registry.ProbeVersion(t.Adapter, 5*time.Second)
		if !v.Untested() {
			return
		}
		host.Emit(t.ID, events.Warn{
			Warning: fmt.Sprintf("%s %s: %s", t.Adapter, v.String(), v.Risk()),
			Adapter: t.Adapter, Version: v.Line, Tested: v.Tested,
		})
	}()
	return func() { <-probed }
}
