package vocab

import "slices"

// The text forms: each type is its word, as the files carry it.

func (s SessionStatus) String() string                { return string(s) }
func (s SessionStatus) MarshalText() ([]byte, error)  { return []byte(s), nil }
func (s *SessionStatus) UnmarshalText(b []byte) error { *s = SessionStatus(b); return nil }
func (s SessionStatus) Known() bool                   { return slices.Contains(SessionStatuses, s) }
func (s TaskStatus) String() string                   { return string(s) }
func (s TaskStatus) MarshalText() ([]byte, error)     { return []byte(s), nil }
func (s *TaskStatus) UnmarshalText(b []byte) error    { *s = TaskStatus(b); return nil }
func (s TaskStatus) Known() bool                      { return slices.Contains(TaskStatuses, s) }
func (s StepStatus) String() string                   { return string(s) }
func (s StepStatus) MarshalText() ([]byte, error)     { return []byte(s), nil }
func (s *StepStatus) UnmarshalText(b []byte) error    { *s = StepStatus(b); return nil }
func (s StepStatus) Known() bool                      { return slices.Contains(StepStatuses, s) }
func (t StepType) String() string                     { return string(t) }
func (t StepType) MarshalText() ([]byte, error)       { return []byte(t), nil }
func (t *StepType) UnmarshalText(b []byte) error      { *t = StepType(b); return nil }
func (t StepType) Known() bool                        { return slices.Contains(StepTypes, t) }
func (r Reason) String() string                       { return string(r) }
func (r Reason) MarshalText() ([]byte, error)         { return []byte(r), nil }
func (r *Reason) UnmarshalText(b []byte) error        { *r = Reason(b); return nil }
func (r Reason) Known() bool                          { return slices.Contains(Reasons, r) }
func (s SessionState) String() string                 { return string(s) }
func (s SessionState) MarshalText() ([]byte, error)   { return []byte(s), nil }
func (s *SessionState) UnmarshalText(b []byte) error  { *s = SessionState(b); return nil }
func (s SessionState) Known() bool                    { return slices.Contains(SessionStates, s) }

// Strings are words as plain strings, for messages that list them.
func Strings[W ~string](words []W) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = string(w)
	}
	return out
}

// Because is the prose a step run's Reason carries: the reason's word, then
// why in a person's words ("merge_conflict: 2 files"). The word up front
// lets the engine, a report and a person tell the reason back from it.
func (r Reason) Because(why string) string { return string(r) + ": " + why }
