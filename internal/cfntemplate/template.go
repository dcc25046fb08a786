// Package cfntemplate reads a CloudFormation or AWS SAM template written in YAML into plain Go
// values (map[string]any, []any, string, int, float64, bool), with the short-form intrinsic
// functions (!Ref, !GetAtt, !Sub, !If, ...) turned into their long form ({"Ref": ...},
// {"Fn::GetAtt": [resource, attribute]}, {"Fn::Sub": ...}), as CloudFormation reads them.
//
// It exists so that Go tests can hold the deployed template (template.yaml) to the code: the
// table's keys against dynamo.TableDefinition, each function's permissions against the calls it
// makes. gopkg.in/yaml.v3 has no notion of CloudFormation's tags, hence the node walk below.
package cfntemplate

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed template. Sections that are absent are empty maps.
type Template struct {
	Parameters map[string]map[string]any
	// Mappings is the Mappings section: Mappings[map][topKey][secondKey], as Fn::FindInMap reads it.
	Mappings   map[string]map[string]map[string]any
	Conditions map[string]any
	// Globals is SAM's Globals section (e.g. Globals["Function"]).
	Globals   map[string]map[string]any
	Resources map[string]Resource
	Outputs   map[string]map[string]any
}

// Resource is one entry of Resources.
type Resource struct {
	Type           string
	Condition      string
	DeletionPolicy string
	Properties     map[string]any
	Metadata       map[string]any
}

// Load reads and parses the template at path.
func Load(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cfntemplate: %w", err)
	}
	return Parse(data)
}

// Parse parses a YAML template. Errors name the line of the offending node.
func Parse(data []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("cfntemplate: %w", err)
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("cfntemplate: expected one YAML document")
	}
	v, err := value(doc.Content[0])
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("cfntemplate: the template is not a mapping")
	}
	t := &Template{
		Parameters: map[string]map[string]any{},
		Mappings:   map[string]map[string]map[string]any{},
		Conditions: mapOf(top["Conditions"]),
		Globals:    map[string]map[string]any{},
		Resources:  map[string]Resource{},
		Outputs:    map[string]map[string]any{},
	}
	for k, p := range mapOf(top["Parameters"]) {
		t.Parameters[k] = mapOf(p)
	}
	for name, m := range mapOf(top["Mappings"]) {
		rows := map[string]map[string]any{}
		for k, row := range mapOf(m) {
			rows[k] = mapOf(row)
		}
		t.Mappings[name] = rows
	}
	for k, g := range mapOf(top["Globals"]) {
		t.Globals[k] = mapOf(g)
	}
	for k, o := range mapOf(top["Outputs"]) {
		t.Outputs[k] = mapOf(o)
	}
	for id, r := range mapOf(top["Resources"]) {
		m := mapOf(r)
		typ, _ := m["Type"].(string)
		if typ == "" {
			return nil, fmt.Errorf("cfntemplate: resource %s has no Type", id)
		}
		cond, _ := m["Condition"].(string)
		del, _ := m["DeletionPolicy"].(string)
		t.Resources[id] = Resource{Type: typ, Condition: cond, DeletionPolicy: del,
			Properties: mapOf(m["Properties"]), Metadata: mapOf(m["Metadata"])}
	}
	return t, nil
}

// ResourcesOfType returns the logical IDs of the resources of type typ.
func (t *Template) ResourcesOfType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	return ids
}

// Lookup follows path through nested maps (string keys) and lists (int indexes) from v.
func Lookup(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			v = l[k]
		default:
			return nil, false
		}
	}
	return v, true
}

func mapOf(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// longNames maps a short-form tag to its long-form key; tags not listed take "Fn::" + name.
var longNames = map[string]string{"!Ref": "Ref", "!Condition": "Condition"}

// value converts a node into plain values, short-form intrinsics into their long form.
func value(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return value(n.Alias)
	}
	tag := n.Tag
	if strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!") {
		inner := *n
		inner.Tag = ""
		inner.Style &^= yaml.TaggedStyle
		var v any
		var err error
		if n.Kind == yaml.ScalarNode {
			// An intrinsic's scalar argument is a string (!Ref 5 names "5").
			v = n.Value
		} else if v, err = value(&inner); err != nil {
			return nil, err
		}
		if tag == "!GetAtt" {
			if s, ok := v.(string); ok {
				res, attr, found := strings.Cut(s, ".")
				if !found {
					return nil, fmt.Errorf("cfntemplate: line %d: !GetAtt %q is not Resource.Attribute", n.Line, s)
				}
				v = []any{res, attr}
			}
		}
		name, ok := longNames[tag]
		if !ok {
			name = "Fn::" + tag[1:]
		}
		return map[string]any{name: v}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("cfntemplate: line %d: duplicate key %q", n.Content[i].Line, k)
			}
			v, err := value(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := value(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("cfntemplate: line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("cfntemplate: line %d: unexpected YAML node", n.Line)
}

// String returns v as a string: strings as they are, numbers and booleans in decimal text (the
// way CloudFormation passes a Number parameter's value on).
func String(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
