package acp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// BenchmarkUpdates: session/update chunks through the client to its
// consumer, read from memory (the agent costs nothing here).
func BenchmarkUpdates(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %d "}}}}`+"\n", i)
	}
	n := 0
	b.ResetTimer()
	start := time.Now()
	c := Start(io.Discard, &buf, Options{OnEvent: func(agentstream.Event) { n++ }})
	_ = c.Wait()
	if n != b.N {
		b.Fatalf("%d of %d", n, b.N)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "chunks/s")
}

// BenchmarkPermissionAnswer: from a session/request_permission written to
// the client to the policy's answer (by option kind) read back: p50, p99.
func BenchmarkPermissionAnswer(b *testing.B) {
	toClient, agentOut := io.Pipe()
	fromClient, clientOut := io.Pipe()
	c := Start(clientOut, toClient, Options{Decide: Policy{AutoApprove: true}.Decide})
	answers := bufio.NewReader(fromClient)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t%d","title":"touch x","kind":"execute","rawInput":{"command":"touch x"}},"options":[{"optionId":"no","name":"No","kind":"reject_once"},{"optionId":"yes","name":"Yes","kind":"allow_once"}]}}`+"\n", i, i)
		t0 := time.Now()
		if _, err := agentOut.Write([]byte(req)); err != nil {
			b.Fatal(err)
		}
		line, err := answers.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if !bytes.Contains(line, []byte(`"optionId":"yes"`)) {
			b.Fatalf("answer %s", line)
		}
	}
	b.StopTimer()
	_ = agentOut.Close() // every request was answered: the client ends
	_ = c.Wait()
	_ = clientOut.Close()
	reportPercentiles(b, lat)
}

// reportPercentiles reports the p50 and p99 of lat, in ms.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
