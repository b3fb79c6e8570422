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
					switch k {
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
