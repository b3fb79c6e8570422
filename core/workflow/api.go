package workflow

// AdapterSet is what validation needs to know about registered adapters.
// *adapters.Registry satisfies it.
type AdapterSet interface {
	Has(name string) bool
	Names() []string // sorted
}

// ModeSet is optionally implemented by an AdapterSet that knows which
// execution modes each adapter has (*adapters.Registry does).
type ModeSet interface {
	HasMode(adapter, mode string) bool
	TakesQueue(adapter, mode string) bool
}

// LoadOptions control loading and validation.
type LoadOptions struct {
	Adapters      AdapterSet
	ForceHeadless bool // --headless: every task runs headless, so each needs a prompt
}
