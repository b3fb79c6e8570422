package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// draft07Keywords are the keywords of JSON Schema draft-07 (and the
// metadata ajv knows): a strict validator (ajv, whose strict mode is on by
// default) refuses a schema with any other, such as an editor's
// deprecationMessage or markdownDescription.
var draft07Keywords = strings.Fields(`$schema $id $ref $comment definitions title description default examples
	deprecated readOnly writeOnly type enum const properties additionalProperties patternProperties
	required items additionalItems minItems maxItems uniqueItems contains minLength maxLength pattern
	format minimum maximum exclusiveMinimum exclusiveMaximum multipleOf oneOf anyOf allOf not if then
	else propertyNames minProperties maxProperties dependencies contentMediaType contentEncoding`)

func TestSchemasUseOnlyStandardKeywords(t *testing.T) {
	for _, name := range Names() {
		data, _ := Get(name)
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(v any, path string, named bool)
		walk = func(v any, path string, named bool) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if named {
						// The names of properties and definitions: each a schema.
						walk(x, path+"/"+k, false)
						continue
					}
					if !slices.Contains(draft07Keywords, k) {
						t.Errorf("%s.schema.json%s: %q is not a draft-07 keyword: strict validators refuse it", name, path, k)
					}
					checkStrictTypes(t, name+".schema.json"+path, v)
					switch k {
					case "required":
					case "properties", "patternProperties", "definitions", "dependencies":
						walk(x, path+"/"+k, true)
					case "enum", "const", "default", "examples":
					default:
						walk(x, path+"/"+k, false)
					}
				}
			case []any:
				for _, x := range v {
					walk(x, path, false)
				}
			}
		}
		walk(doc, "", false)
	}
}

// typeKeywords are the keywords that apply to one type only: ajv's
// strictTypes wants that type written beside them.
var typeKeywords = map[string][]string{
	"object": {"properties", "additionalProperties", "required", "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependencies"},
	"array":  {"items", "minItems", "maxItems", "uniqueItems", "contains", "additionalItems"},
	"string": {"minLength", "maxLength", "pattern", "format"},
	"number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}

// checkStrictTypes checks one schema object as ajv's strict mode does
// (strict: true, as ajv --strict=true): no union type (a list under type),
// a type-specific keyword only beside its type, and each required property
// defined under properties.
func checkStrictTypes(t *testing.T, where string, schema map[string]any) {
	t.Helper()
	typ, hasType := schema["type"]
	if _, union := typ.([]any); union {
		t.Errorf("%s: a union type %v: ajv's strict mode refuses it (use anyOf)", where, typ)
		return
	}
	_, ref := schema["$ref"]
	for ty, kws := range typeKeywords {
		for _, kw := range kws {
			if _, ok := schema[kw]; ok && !ref && (!hasType || typ != ty && !(ty == "number" && typ == "integer")) {
				t.Errorf("%s: %q without type %q: ajv's strict mode refuses it", where, kw, ty)
			}
		}
	}
	req, _ := schema["required"].([]any)
	props, _ := schema["properties"].(map[string]any)
	for _, r := range req {
		if _, ok := props[r.(string)]; !ok {
			t.Errorf("%s: required %q is not under properties: ajv's strict mode refuses it", where, r)
		}
	}
}
