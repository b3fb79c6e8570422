// Package schemafill makes JSON values that satisfy the schemas model
// clients ask for in side calls (a title, a routing decision, a
// next-speaker check): the fake model servers answer those with it.
package schemafill

import (
	"encoding/json"
	"strings"
)

// Fill makes a value that satisfies a JSON schema (or an OpenAPI-style
// schema with upper-case type names): for each property the preferred value
// when prefer names it (and the enum, if any, allows it), else the first
// enum value, else a simple value of its type ("ok", 1, false, one-item
// arrays). name is the property the schema belongs to ("" at the top).
func Fill(raw json.RawMessage, prefer map[string]any, name string) any {
	var sch struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
		Enum       []any                      `json:"enum"`
		MaxLength  int                        `json:"maxLength"`
	}
	_ = json.Unmarshal(raw, &sch)
	if v, ok := prefer[name]; ok {
		if len(sch.Enum) == 0 {
			return v
		}
		for _, e := range sch.Enum {
			if e == v {
				return v
			}
		}
	}
	if len(sch.Enum) > 0 {
		return sch.Enum[0]
	}
	typ := ""
	switch t := sch.Type.(type) {
	case string:
		typ = t
	case []any:
		if len(t) > 0 {
			typ, _ = t[0].(string)
		}
	}
	switch strings.ToLower(typ) {
	case "object":
		obj := map[string]any{}
		for k, v := range sch.Properties {
			obj[k] = Fill(v, prefer, k)
		}
		return obj
	case "":
		if len(sch.Properties) == 0 {
			return "ok"
		}
		obj := map[string]any{}
		for k, v := range sch.Properties {
			obj[k] = Fill(v, prefer, k)
		}
		return obj
	case "array":
		if len(sch.Items) == 0 {
			return []any{}
		}
		return []any{Fill(sch.Items, prefer, name)}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	s := "ok"
	if sch.MaxLength > 0 && len(s) > sch.MaxLength {
		s = s[:sch.MaxLength]
	}
	return s
}
