package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/vibeteam/vibeteam"

// tiers are the layers of ARCHITECTURE.md, outermost first: a package may
// import the packages of its own tier where the tier says so, and of the
// tiers after its own, never of one before. The first pattern a package
// matches is its tier.
var tiers = []struct {
	name     string
	packages *regexp.Regexp
	sideways bool // its packages may import each other
}{
	{"main", regexp.MustCompile(`^$`), false},
	{"cli", regexp.MustCompile(`^cli$`), false},
	{"commands", regexp.MustCompile(`^cli/\w+cmd$`), false},
	{"cmdutil", regexp.MustCompile(`^cli/cmdutil$`), false},
	{"ui", regexp.MustCompile(`^ui$`), false},
	{"core", regexp.MustCompile(`^core$`), false},
	{"reportpage", regexp.MustCompile(`^internal/reportpage$`), false},
	{"core/*", regexp.MustCompile(`^core/`), true},
	{"adapters", regexp.MustCompile(`^(adapters|builtin|schema)$`), false},
	{"handlers", regexp.MustCompile(`^handlers$`), false},
	{"leaves", regexp.MustCompile(`^(core/vocab|internal/\w+)$`), true},
}

// tierOf is the index in tiers of pkg (its path in the module), -1 for
// none. core/vocab is a leaf, not one of core/*.
func tierOf(pkg string) int {
	if pkg == "core/vocab" {
		return len(tiers) - 1
	}
	for i, t := range tiers {
		if t.packages.MatchString(pkg) {
			return i
		}
	}
	return -1
}

// TestArrowsPointInward: no package of the product imports one of an outer
// tier, nor one of its own tier where the tier's packages do not use each
// other; the arrows of ARCHITECTURE.md hold, and a package that would go
// against them must move or say why here.
func TestArrowsPointInward(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "testdata" || name == "e2e" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		from := filepath.ToSlash(filepath.Dir(path))
		if from == "." {
			from = ""
		}
		ft := tierOf(from)
		if ft < 0 {
			t.Errorf("%s: package %q is in no tier of the arrows", path, from)
			return nil
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			to, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			tt := tierOf(to)
			if tt < ft || tt == ft && !tiers[ft].sideways {
				t.Errorf("%s: %s (%s) imports %s (%s): the arrow runs outward", path, from, tiers[ft].name, to, tiers[max(tt, 0)].name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
