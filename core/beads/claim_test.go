package beads

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// bd update --claim is atomic: of several claimants at once, one gets the
// bead; the others are refused, naming the one who has it. Claiming again
// one's own bead succeeds.
func TestClaimIsAtomicAndNamesTheClaimant(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{fullBead("bd-1", map[string]any{"assignee": ""})})
	c := ctx(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	var lost []*ClaimError
	for _, who := range []string{"ann", "bob", "cat", "dan"} {
		cl := *f.Client
		cl.Env = append(slices.Clone(cl.Env), "BEADS_ACTOR="+who)
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := cl.Claim(c, "bd-1")
			mu.Lock()
			defer mu.Unlock()
			var ce *ClaimError
			switch {
			case err == nil && b.Assignee() == who && b.Status() == StatusInProgress:
				won = append(won, who)
			case errors.As(err, &ce):
				lost = append(lost, ce)
			default:
				t.Errorf("%s: %v %v", who, b, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || len(lost) != 3 {
		t.Fatalf("won %v, lost %d", won, len(lost))
	}
	for _, ce := range lost {
		if ce.By != won[0] || !strings.Contains(ce.Line, "issue already claimed by "+won[0]) {
			t.Errorf("refusal %+v, want one naming %s", ce, won[0])
		}
	}
	again := *f.Client
	again.Env = append(slices.Clone(again.Env), "BEADS_ACTOR="+won[0])
	if _, err := again.Claim(c, "bd-1"); err != nil {
		t.Errorf("claiming one's own bead again: %v", err)
	}
	// A status a claim does not take.
	f2 := newFake(t, []Bead{fullBead("bd-2", map[string]any{"status": "blocked", "assignee": ""})})
	_, err := f2.Claim(c, "bd-2")
	var ce *ClaimError
	if !errors.As(err, &ce) || ce.Status != "blocked" || ce.By != "" {
		t.Errorf("claim of a blocked bead: %v", err)
	}
}

// Closes go in batches, each bead with its reason; bd refuses the epic
// whose child is open, and a flush closes the epic once its last child is
// closed (eligible: nothing else would).
func TestCloserBatchesAndClosesEligibleEpics(t *testing.T) {
	t.Parallel()
	child := func(id string) Bead {
		return fullBead(id, map[string]any{"dependencies": []any{dep("bd-9", "open", "parent-child")}})
	}
	f := newFake(t, []Bead{
		fullBead("bd-9", map[string]any{"issue_type": "epic"}),
		child("bd-9.1"), child("bd-9.2"),
		fullBead("bd-3", nil),
	})
	c := ctx(t)
	refused, err := f.CloseAll(c, []Closing{{"bd-9", "early"}, {"bd-3", "done 3"}})
	if err != nil || !strings.Contains(refused["bd-9"], "cannot close epic bd-9: 2 open child issue(s)") || refused["bd-3"] != "" {
		t.Fatalf("refused %v, %v", refused, err)
	}
	if f.stored("bd-3").CloseReason() != "done 3" || f.stored("bd-9").Status() != StatusOpen {
		t.Fatalf("after the first batch: %v / %v", f.stored("bd-3"), f.stored("bd-9"))
	}
	if ids, err := f.EligibleEpics(c); err != nil || len(ids) != 0 {
		t.Fatalf("eligible with open children: %v %v", ids, err)
	}
	var whys []string
	closer := NewCloser(f.Client, time.Hour, func(id, why string) { whys = append(whys, id+": "+why) })
	closer.Add(f.stored("bd-9.1"), "one")
	closer.Add(f.stored("bd-9.2"), "two")
	if !closer.Urgent() {
		t.Error("the close of an epic's children is not urgent")
	}
	closer.Flush(c)
	closer.Stop(context.Background())
	if len(whys) != 0 {
		t.Fatalf("refused: %v", whys)
	}
	for id, want := range map[string]string{"bd-9.1": "one", "bd-9.2": "two", "bd-9": EpicCloseReason} {
		if b := f.stored(id); b.Status() != StatusClosed || b.CloseReason() != want {
			t.Errorf("%s: %s, %q", id, b.Status(), b.CloseReason())
		}
	}
	var closes int
	for _, call := range f.calls() {
		if call[0] == "close" {
			closes++
		}
	}
	if closes != 3 || !closer.Stale() {
		t.Errorf("%d bd close calls (want the batch of the first test, one of both children, one of the epic); stale %v", closes, closer.Stale())
	}
}
