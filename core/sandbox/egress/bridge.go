package egress

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// BridgeCommand is the hidden subcommand that runs the bridge.
const BridgeCommand = "__egress-bridge"

// DefaultBridgeListen is where the bridge listens inside the sandbox. The
// sandbox has a network namespace of its own, so the port is free there
// whatever runs outside.
const DefaultBridgeListen = "127.0.0.1:39281"

// BridgeOptions are the bridge's arguments.
type BridgeOptions struct {
	Listen  string   // loopback TCP address inside the sandbox
	Socket  string   // the proxy's unix socket, bound into the sandbox
	Command []string // run once listening; the bridge exits with its status
}

// BridgeArgv is the argv that runs the bridge: self is the vibeteam binary
// (as seen inside the sandbox).
func BridgeArgv(self string, o BridgeOptions) []string {
	argv := []string{self, BridgeCommand, "--listen", o.Listen, "--socket", o.Socket}
	if len(o.Command) > 0 {
		argv = append(append(argv, "--"), o.Command...)
	}
	return argv
}

// BridgeWrap is the argv to put before a command inside the sandbox: the
// bridge, then "--".
func BridgeWrap(self, listen, socket string) []string {
	return []string{self, BridgeCommand, "--listen", listen, "--socket", socket, "--"}
}

// ParseBridgeArgs reads the arguments after BridgeCommand.
func ParseBridgeArgs(args []string) (BridgeOptions, error) {
	fs := flag.NewFlagSet(BridgeCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o BridgeOptions
	fs.StringVar(&o.Listen, "listen", DefaultBridgeListen, "loopback address to listen on")
	fs.StringVar(&o.Socket, "socket", "", "the egress proxy's unix socket")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%s: %w", BridgeCommand, err)
	}
	if o.Socket == "" {
		return o, fmt.Errorf("%s: --socket is required", BridgeCommand)
	}
	o.Command = fs.Args()
	return o, nil
}

// Bridge copies each TCP connection it accepts to the proxy's unix socket.
type Bridge struct {
	l      net.Listener
	socket string

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// ListenBridge listens on listen and serves until Close, in goroutines the
// bridge owns. The socket is dialled per connection: the proxy may start
// after the bridge.
func ListenBridge(listen, socket string) (*Bridge, error) {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("egress bridge: %w", err)
	}
	b := &Bridge{l: l, socket: socket, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the address the bridge listens on.
func (b *Bridge) Addr() net.Addr { return b.l.Addr() }

func (b *Bridge) accept() {
	defer b.wg.Done()
	for {
		c, err := b.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !b.track(c) {
			c.Close()
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.untrack(c)
			up, err := net.Dial("unix", b.socket)
			if err != nil {
				return
			}
			if !b.track(up) {
				up.Close()
				return
			}
			defer b.untrack(up)
			splice(c, up)
		}()
	}
}

func (b *Bridge) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *Bridge) untrack(c net.Conn) {
	c.Close()
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// Close stops listening, ends every connection and waits for them.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	err := b.l.Close()
	b.wg.Wait()
	return err
}

// RunBridge is the bridge subcommand: it listens, then runs o.Command on
// the process's own standard streams and returns its exit status (128+N
// for a signal N, as a shell does). Without a command it serves until
// SIGINT, SIGTERM or SIGHUP. While the command runs, those signals are
// swallowed: the command, in the same process group, gets them itself.
func RunBridge(o BridgeOptions) (int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	b, err := ListenBridge(o.Listen, o.Socket)
	if err != nil {
		return 1, err
	}
	defer b.Close()
	if len(o.Command) == 0 {
		<-sigs
		return 0, nil
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("egress bridge: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case <-sigs:
		case err := <-done:
			return exitStatus(cmd.ProcessState, err)
		}
	}
}

func exitStatus(ps *os.ProcessState, err error) (int, error) {
	if ps == nil {
		return 1, err
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}
