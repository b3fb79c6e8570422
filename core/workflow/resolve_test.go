package workflow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestResolve(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, ".vibeteam", "workflows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("id: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	review := write("review.yaml")
	write("review.yml") // .yaml wins
	lint := write("lint.yml")
	deploy := write("deploy.json")
	if err := os.Mkdir(filepath.Join(dir, "dironly.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	direct := filepath.Join(base, "direct.yaml")
	if err := os.WriteFile(direct, []byte("id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		in, want string
	}{
		{"review", review},
		{"lint", lint},
		{"deploy", deploy},
		{direct, direct},
		{filepath.Join(dir, "lint.yml"), filepath.Join(dir, "lint.yml")},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.in, base)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}

	// A directory in the working directory named like a workflow does not
	// hide the named workflow.
	t.Chdir(base)
	if err := os.Mkdir("review", 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve("review", base); err != nil || got != review {
		t.Errorf("Resolve(review) with a review/ directory = %q, %v; want %q", got, err, review)
	}
	// A file in the working directory is taken as is.
	if err := os.WriteFile("local.yaml", []byte("id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve("local.yaml", base); err != nil || got != "local.yaml" {
		t.Errorf("Resolve(local.yaml) = %q, %v", got, err)
	}
}

func TestResolveNotFound(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, ".vibeteam", "workflows")
	var tried []string
	for _, d := range []string{dir, filepath.Join(base, ".vibeteam", "grimoires"), filepath.Join(base, ".coven", "grimoires")} {
		for _, ext := range []string{".yaml", ".yml", ".json"} {
			tried = append(tried, filepath.Join(d, "missing"+ext))
		}
	}
	tests := []struct {
		in    string
		tried []string
	}{
		{"missing", tried},
		// Has an extension or a separator: a path, not a name.
		{"missing.yaml", []string{"missing.yaml"}},
		{filepath.Join(base, "sub", "x"), []string{filepath.Join(base, "sub", "x")}},
	}
	for _, tt := range tests {
		_, err := Resolve(tt.in, base)
		var nf *NotFoundError
		if !errors.As(err, &nf) {
			t.Fatalf("Resolve(%q) = %v, want a *NotFoundError", tt.in, err)
		}
		if nf.Name != tt.in || !reflect.DeepEqual(nf.Tried, tt.tried) {
			t.Errorf("Resolve(%q) = %+v, want tried %q", tt.in, nf, tt.tried)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Resolve(%q) error does not match fs.ErrNotExist", tt.in)
		}
	}

	_, err := Resolve("missing", base)
	want := `workflow "missing" not found (tried ` + filepath.Join(dir, "missing.{yaml,yml,json}") + ", " +
		filepath.Join(base, ".vibeteam", "grimoires", "missing.{yaml,yml,json}") + ", " +
		filepath.Join(base, ".coven", "grimoires", "missing.{yaml,yml,json}") + ")"
	if err.Error() != want {
		t.Errorf("message = %q\nwant      %q", err.Error(), want)
	}

	// A directory is not a workflow file.
	if err := os.MkdirAll(filepath.Join(dir, "x.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("x", base); !errors.As(err, new(*NotFoundError)) {
		t.Errorf("Resolve(x) with only a directory x.yaml = %v", err)
	}
	if _, err := Resolve("", base); err == nil {
		t.Error("Resolve(\"\") succeeded")
	}
}
