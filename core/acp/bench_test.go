package acp

import (
	"bytes"
	"fmt"
	"io"
	"testing"

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
	c := Start(io.Discard, &buf, Options{OnEvent: func(agentstream.Event) { n++ }})
	_ = c.Wait()
	if n != b.N {
		b.Fatalf("%d of %d", n, b.N)
	}
}
