package workflow

// AdapterSet is what validation needs to know about registered adapters.
// *adapters.Registry satisfies it.
type AdapterSet interface {
	Has(name string) bool
	Names() []string // sorted
}

// LoadOptions control loading and validation.
type LoadOptions struct {
	Adapters      AdapterSet
	ForceHeadless bool // --headless: every task runs headless, so each needs a prompt
}
