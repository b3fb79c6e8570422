package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// BenchmarkStepOverhead is what the engine itself costs per step, with
// processes that end at once (no fork, no exec): the journal, the store,
// the events, the interpreter. The product's ratio to sh (cli's
// BenchmarkLongWorkflow, BenchmarkScriptGrimoire) is this plus the cost of
// a spawn.
func BenchmarkStepOverhead(b *testing.B) {
	const n = 200
	defs := map[string]string{"stages": "", "scripts": ""}
	var st, sc strings.Builder
	st.WriteString("id: long\nstages:\n")
	sc.WriteString("name: long\nsteps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&st, "  - id: s%d\n    tasks:\n      - { id: t%d, adapter: shell, executionMode: headless, prompt: \"echo %d\" }\n", i, i, i)
		fmt.Fprintf(&sc, "  - {name: s%d, type: script, command: echo %d}\n", i, i)
	}
	defs["stages"], defs["scripts"] = st.String(), sc.String()
	reg := adapters.NewRegistry()
	for _, kind := range []string{"stages", "scripts"} {
		b.Run(kind, func(b *testing.B) {
			def, err := workflow.Parse([]byte(defs[kind]), "wf.yaml", workflow.LoadOptions{Adapters: reg})
			if err != nil {
				b.Fatal(err)
			}
			procs := &fakeProcesses{scripts: map[string]fakeScript{}}
			for i := 0; i < n; i++ {
				procs.scripts[fmt.Sprintf("echo %d", i)] = fakeScript{output: fmt.Sprintf("%d\n", i)}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				mgr := state.NewManager(dir)
				elog, err := state.OpenEventLog(mgr.EventLogPath("fake0001"))
				if err != nil {
					b.Fatal(err)
				}
				sess := &state.Session{ID: "fake0001", Workflow: def.ID, WorkflowDefinition: def, BaseDir: dir, StartTime: time.Now(), History: []state.HistoryEntry{}}
				x := New(sess, Options{Settings: taskrun.Settings{Processes: procs, Choices: taskrun.Choices{Grace: time.Second}, Registry: reg, Manager: mgr}, Emit: func(e state.Event) { _ = elog.Write(e) }})
				if err := mgr.Save(sess); err != nil {
					b.Fatal(err)
				}
				procs.started = procs.started[:0]
				b.StartTimer()
				out, err := x.Run(context.Background())
				if err != nil || out.Status != state.StatusCompleted {
					b.Fatalf("%v %+v", err, out)
				}
				b.StopTimer()
				elog.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/step")
		})
	}
}
