package events

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Map gives what Fields gives (once through JSON, as a reader sees it).
func TestMapAgreesWithFields(t *testing.T) {
	t.Parallel()
	for _, v := range []interface{ Map() map[string]any }{
		StepStarted{Name: "a", Type: "script", Address: "1.2/0", Iteration: 2, Inputs: map[string]string{"command": "echo 'x'"}},
		StepStarted{Name: "a", Type: "loop", Address: "0"},
		StepCompleted{Name: "t", Type: "script", Address: "1.2/0", Iteration: 2, Status: "failed", ExitCode: 1, Output: "o", Truncated: true, Summary: "s", Reason: "r", LogPath: "p", DurationMS: 5},
		StepCompleted{Name: "t", Type: "agent", Address: "3", Status: "done", Success: true},
	} {
		b, err := json.Marshal(v.Map())
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if want := Fields(v); !reflect.DeepEqual(got, want) {
			t.Errorf("%T:\n Map    %v\n Fields %v", v, got, want)
		}
	}
}
