package ui

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// loop is bubbletea's model of a UI: every change reaches it as a message
// on one channel, and one goroutine applies them in the order they were
// sent and is the only one to touch the state they change. Whoever sends
// holds no UI lock, and the loop takes none; so no UI lock is ever held
// while another is taken. The loop also redraws on its ticker, and at once
// when the terminal is resized, so that lines are cut to the new width
// before the terminal wraps them. Its owner ends it with close, which waits
// for it.
type loop struct {
	msgs      chan func() // nil ends the loop
	done      chan struct{}
	closeOnce sync.Once

	// The loop goroutine's own.
	onTick func()
	ticker *time.Ticker
	winch  chan os.Signal
}

// startLoop starts a loop whose ticks call onTick (in the loop).
func startLoop(onTick func()) *loop {
	l := &loop{msgs: make(chan func()), done: make(chan struct{}), onTick: onTick}
	go l.run()
	return l
}

func (l *loop) run() {
	defer close(l.done)
	defer l.stopTicking()
	for {
		var tick <-chan time.Time
		if l.ticker != nil {
			tick = l.ticker.C
		}
		select {
		case msg := <-l.msgs:
			if msg == nil {
				return
			}
			msg()
		case <-tick:
			l.onTick()
		case <-l.winch:
			l.onTick()
		}
	}
}

// send hands msg to the loop; once the loop has ended it is dropped.
func (l *loop) send(msg func()) {
	select {
	case l.msgs <- msg:
	case <-l.done:
	}
}

// call hands msg to the loop and waits until it has been applied.
func (l *loop) call(msg func()) {
	applied := make(chan struct{})
	select {
	case l.msgs <- func() { defer close(applied); msg() }:
		<-applied
	case <-l.done:
	}
}

// close ends the loop, once every message sent before has been applied,
// and waits for it.
func (l *loop) close() {
	l.closeOnce.Do(func() {
		l.send(nil)
		<-l.done
	})
}

// startTicking redraws every period and on a resize (in the loop).
func (l *loop) startTicking(period time.Duration) {
	if l.ticker == nil {
		l.ticker = time.NewTicker(period)
		l.winch = make(chan os.Signal, 1)
		signal.Notify(l.winch, syscall.SIGWINCH)
	}
}

// stopTicking stops the redraws (in the loop).
func (l *loop) stopTicking() {
	if l.ticker != nil {
		l.ticker.Stop()
		signal.Stop(l.winch)
		l.ticker, l.winch = nil, nil
	}
}
