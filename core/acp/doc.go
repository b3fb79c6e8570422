// Package acp drives an agent over the Agent Client Protocol (ACP,
// https://agentclientprotocol.com, protocol version 1): JSON-RPC 2.0, one
// message a line, over the agent process's stdin and stdout. It is the
// client side: initialize, session/new (with the task's MCP servers),
// session/load, session/set_mode, session/prompt and session/cancel; the
// agent's session/update notifications become the typed agent events the
// headless stream parsers emit (agentstream.Event: messages, thinking, tool
// calls and results by tool call id, usage, and plans), and its
// session/request_permission requests are answered by a Decider (the
// adapter's policy by option kind, a person, or parked).
//
// Written on the protocol's schema rather than on
// github.com/coder/acp-go-sdk v0.13.5, which was evaluated and falls short
// here in four ways:
//   - its connection queues at most 1024 notifications and closes the
//     connection when the queue is full: an agent that floods
//     session/update faster than the event log takes them loses its
//     session. Here the reader hands each message on in order and waits,
//     so the pipe pushes back on the agent: nothing is lost and memory
//     stays bounded;
//   - it reads with a bufio.Scanner that allocates 1 MiB per connection
//     up front and ends the connection on a line over 10 MiB with the
//     scanner's bare "token too long"; here lines are read with
//     agentstream.LineReader: any length in bounded memory (a long
//     message's long strings cut), and only a message too large even so
//     ends the run, saying so;
//   - its union decoders refuse a whole update when one variant's field
//     has an unexpected type, and it reports through slog's default
//     logger; core never prints, and an update this client cannot read
//     is skipped alone;
//   - its Client interface requires the fs and terminal methods even when
//     not advertised (here every request the client did not advertise is
//     refused with "method not found").
//
// The schema's types used here are the few fields vibeteam reads.
package acp
