package render

import (
	"reflect"
	"testing"
)

func TestReferences(t *testing.T) {
	tests := []struct {
		text    string
		want    []string
		wantErr bool
	}{
		{text: "plain", want: nil},
		{text: "{{.tests.output}} {{.goal}} {{.tests.failed}}", want: []string{"goal", "tests"}},
		{text: `{{(step "run-tests").output}} {{step "lint"}}`, want: []string{"lint", "run-tests"}},
		{text: "{{if .previous.failed}}{{.fix.summary}}{{else}}{{.bead.title}}{{end}}", want: []string{"bead", "fix", "previous"}},
		{text: "{{with .impl}}{{.output}}{{$.goal}}{{else}}{{.other}}{{end}}", want: []string{"goal", "impl", "other"}},
		{text: "{{range .impl.changed_files}}{{.}}{{.x}}{{end}}", want: []string{"impl"}},
		{text: `{{$v := .a}}{{$v.b}} {{printf "%s" (.c).d}} {{eq .e 1}}`, want: []string{"a", "c", "e"}},
		{text: `{{define "t"}}{{.inner}}{{$.x}}{{end}}{{template "t" .outer}}`, want: []string{"outer"}},
		{text: `{{include "p.md" k={{.bead.id}}}}`, want: []string{"bead"}},
		{text: "{{.x", wantErr: true},
	}
	for _, tt := range tests {
		got, err := References(tt.text)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("References(%q) = %q, %v; want %q", tt.text, got, err, tt.want)
		}
	}
}
