package cfntemplate

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseShortForms(t *testing.T) {
	tpl, err := Parse([]byte(`
Parameters:
  Name: { Type: String, Default: x }
Mappings:
  Sizes:
    "0": { Limit: 5, Name: small }
    8: { Limit: 48 }
Conditions:
  IsX: !Equals [!Ref Name, x]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Condition: IsX
    DeletionPolicy: Retain
    Metadata: { BuildMethod: makefile }
    Properties:
      Timeout: 29
      Ratio: 0.5
      On: true
      Arn: !GetAtt Table.StreamArn
      Listed: !GetAtt [Table, Arn]
      Sub: !Sub ${Table.Arn}/index/gsi1
      Pick: !If [IsX, AWS_IAM, !Ref AWS::NoValue]
      Num: !Ref 5
      Joined: !Join
        - ","
        - [a, !Ref Name]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := tpl.Resources["Fn"]
	if r.Type != "AWS::Serverless::Function" || r.Condition != "IsX" || r.DeletionPolicy != "Retain" || r.Metadata["BuildMethod"] != "makefile" {
		t.Fatalf("resource = %+v", r)
	}
	want := map[string]any{
		"Timeout": 29, "Ratio": 0.5, "On": true,
		"Arn":    map[string]any{"Fn::GetAtt": []any{"Table", "StreamArn"}},
		"Listed": map[string]any{"Fn::GetAtt": []any{"Table", "Arn"}},
		"Sub":    map[string]any{"Fn::Sub": "${Table.Arn}/index/gsi1"},
		"Pick":   map[string]any{"Fn::If": []any{"IsX", "AWS_IAM", map[string]any{"Ref": "AWS::NoValue"}}},
		"Num":    map[string]any{"Ref": "5"},
		"Joined": map[string]any{"Fn::Join": []any{",", []any{"a", map[string]any{"Ref": "Name"}}}},
	}
	if !reflect.DeepEqual(r.Properties, want) {
		t.Fatalf("properties:\n got %#v\nwant %#v", r.Properties, want)
	}
	wantMaps := map[string]map[string]map[string]any{"Sizes": {"0": {"Limit": 5, "Name": "small"}, "8": {"Limit": 48}}}
	if !reflect.DeepEqual(tpl.Mappings, wantMaps) {
		t.Fatalf("mappings = %#v, want %#v", tpl.Mappings, wantMaps)
	}
	if got := tpl.Conditions["IsX"]; !reflect.DeepEqual(got, map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Name"}, "x"}}) {
		t.Fatalf("condition = %#v", got)
	}
	if v, ok := Lookup(r.Properties, "Pick", "Fn::If", 2, "Ref"); !ok || v != "AWS::NoValue" {
		t.Fatalf("Lookup = %v, %v", v, ok)
	}
	if _, ok := Lookup(r.Properties, "Pick", "Fn::If", 3); ok {
		t.Fatal("Lookup past the end of a list succeeded")
	}
	if s, ok := String(r.Properties["Timeout"]); !ok || s != "29" {
		t.Fatalf("String(29) = %q, %v", s, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"bad GetAtt":    "Resources:\n  A:\n    Type: X\n    Properties: { P: !GetAtt NoDot }\n",
		"no type":       "Resources:\n  A:\n    Properties: {}\n",
		"duplicate key": "Resources:\n  A: { Type: X }\n  A: { Type: Y }\n",
		"not a map":     "- a\n- b\n",
		"not YAML":      "a: [b\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.HasPrefix(err.Error(), "cfntemplate: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
