package budget

import (
	"sync"
	"testing"
)

func TestMeterCountsAgainstItsParents(t *testing.T) {
	t.Parallel()
	run := NewMeter(Limit{CostUSD: 1}, nil)
	session := NewMeter(Limit{Tokens: 1000}, run)
	step := NewMeter(Limit{}, session)

	step.Add(400, 0.30)
	if what, over := step.Exceeded(); over {
		t.Fatalf("over after 400 tokens, $0.30: %s", what)
	}
	step.Add(600, 0.10)
	what, over := step.Exceeded()
	if !over || what != "tokens 1,000 of 1,000" {
		t.Fatalf("step: %q %v, want the session's token budget spent", what, over)
	}
	if _, over := run.Exceeded(); over {
		t.Fatal("the run's cost budget is not spent")
	}
	// Another session of the same run spends its own share; the run's
	// limit stops both.
	run.Named("the run's budget")
	other := NewMeter(Limit{}, run)
	other.Add(10, 0.65)
	if what, over := other.Exceeded(); !over || what != "cost $1.05 of $1.00 (the run's budget)" {
		t.Fatalf("other: %q %v", what, over)
	}
	if tok, cost := run.Spent(); tok != 1010 || cost < 1.049 || cost > 1.051 {
		t.Fatalf("run spent %d, %v", tok, cost)
	}
	if got := session.Report(); got != "1,000 of 1,000 tokens, $0.40" {
		t.Fatalf("report %q", got)
	}
}

func TestNilMeterMetersNothing(t *testing.T) {
	t.Parallel()
	var m *Meter
	m.Add(5, 1)
	if _, over := m.Exceeded(); over {
		t.Fatal("a nil meter is never exceeded")
	}
	if NewMeter(Limit{}, m).Limit().IsZero() != true {
		t.Fatal("no limit")
	}
}

func TestMeterIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	root := NewMeter(Limit{Tokens: 1 << 40}, nil)
	var wg sync.WaitGroup
	for range 8 {
		child := NewMeter(Limit{}, root)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				child.Add(1, 0.001)
				child.Exceeded()
			}
		}()
	}
	wg.Wait()
	if tok, _ := root.Spent(); tok != 8000 {
		t.Fatalf("root spent %d tokens, want 8000", tok)
	}
}

func TestFormats(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1200: "-1,200"} {
		if got := Count(in); got != want {
			t.Errorf("Count(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0: "$0.00", 0.0042: "$0.0042", 1.5: "$1.50", 12.345: "$12.35"} {
		if got := Dollars(in); got != want {
			t.Errorf("Dollars(%v) = %q, want %q", in, got, want)
		}
	}
	if got := (Limit{Tokens: 50000, CostUSD: 1}).String(); got != "50,000 tokens, $1.00" {
		t.Errorf("Limit.String = %q", got)
	}
}
