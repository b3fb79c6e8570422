package cli

import (
	"context"
	"fmt"
	"os"
	"sync"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/telemetry"
)

// telemetryKey is where an invocation keeps its exporter, in the app's
// metadata: made by the first session that runs, shut down once, when
// the command ends.
const telemetryKey = "telemetry"

// lazyTelemetry starts the OpenTelemetry export when a session first
// asks for it, if the OTEL_* variables ask for one.
type lazyTelemetry struct {
	once   sync.Once
	t      *telemetry.Telemetry
	warnTo IO
}

func (l *lazyTelemetry) get() *telemetry.Telemetry {
	l.once.Do(func() {
		l.t = telemetry.New(context.Background(), os.Getenv, versionString(), func(msg string) {
			fmt.Fprintln(l.warnTo.Err, "vibeteam: warning:", msg)
		})
	})
	return l.t
}

// telemetryOf is the invocation's exporter; nil when the variables ask
// for none.
func telemetryOf(c *ucli.Context) *telemetry.Telemetry {
	if c == nil || c.App == nil {
		return nil
	}
	l, ok := c.App.Metadata[telemetryKey].(*lazyTelemetry)
	if !ok || l == nil {
		return nil
	}
	return l.get()
}

// shutdownTelemetry flushes what the invocation exported (bounded).
func shutdownTelemetry(app *ucli.App) {
	if l, ok := app.Metadata[telemetryKey].(*lazyTelemetry); ok && l != nil {
		// Whatever once did (or will never do) is done: no export starts
		// after this.
		l.once.Do(func() {})
		l.t.Shutdown()
	}
}
