package workflow

import (
	"github.com/vibeteam/vibeteam/core/render"
	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// onConflict reads a merge step's on_conflict: the word resolve, or the
// long form {resolve: {adapter: NAME, spell: NAME}} (both keys optional).
func (p *parser) onConflict(val *yaml.Node, f string) *OnConflict {
	v := p.Deref(val)
	p.Pos[f] = p.At(v)
	const what = `resolve, or {resolve: {adapter: NAME, spell: NAME}}`
	switch v.Kind {
	case yaml.ScalarNode:
		word, ok := p.String(v, f)
		if !ok {
			return nil
		}
		if word != OnConflictResolve {
			p.Fail(v, f, "%s", yamlnode.OneOf(word, OnConflictResolve)+` (or the long form {resolve: {adapter: NAME, spell: NAME}})`)
			return nil
		}
		return &OnConflict{Resolve: true}
	case yaml.MappingNode:
	default:
		p.MustBe(v, f, what)
		return nil
	}
	oc := &OnConflict{Resolve: true}
	p.Fields(v, f, what, []string{OnConflictResolve}, func(kv yamlnode.Pair) {
		rf := f + "." + OnConflictResolve
		p.Fields(kv.Val, rf, "a mapping with adapter and spell", []string{"adapter", "spell"}, func(kv yamlnode.Pair) {
			switch kv.Key.Value {
			case "adapter":
				oc.Adapter = p.text(kv.Val, rf+".adapter")
			case "spell":
				oc.Spell = p.text(kv.Val, rf+".spell")
			}
		})
	})
	return oc
}

// onConflict checks a merge step's on_conflict: its adapter is known, its
// spell a name that exists (the built-in one when not written).
func (c *checker) onConflict(oc *OnConflict, f string, spos Pos) {
	if c.broken[f] {
		return
	}
	rf := f + "." + OnConflictResolve
	af, spf := rf+".adapter", rf+".spell"
	if oc.Adapter != "" && !c.broken[af] {
		c.adapterKnown(af, oc.Adapter, c.at(af, spos))
	}
	spell := oc.Spell
	if spell == "" || c.broken[spf] {
		return
	}
	if msg := spellNameProblem(spell); msg != "" {
		c.add(c.at(spf, spos), spf, msg)
		return
	}
	if c.opts.BaseDir != "" {
		if c.spells == nil {
			c.spells = render.NewSpells(c.opts.BaseDir)
		}
		if err := c.spells.Check(spell); err != nil {
			c.add(c.at(spf, spos), spf, err.Error())
		}
	}
}
