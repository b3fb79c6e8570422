package workflow

import "github.com/vibeteam/vibeteam/internal/yamlnode"

// Error is one problem in a definition file: "file:line:col: field: msg",
// with "warning: " before the field for a problem that does not make the
// file invalid. Field is a dotted path to the offending value
// (stages[1].tasks[0].adapter) so a problem can be found even when the
// position is unknown, as for a definition reloaded from a session. It is
// the error type of every file vibeteam reads (adapter files too), so the
// same mistake is worded and located the same way in all of them.
type Error = yamlnode.Error

// ErrorList is every problem found in one file, in file order. Reporting them
// all at once spares the user one edit-and-rerun cycle per mistake. Err
// returns it as an error (a true nil when empty) and HasErrors says whether
// it holds more than warnings.
type ErrorList = yamlnode.ErrorList
