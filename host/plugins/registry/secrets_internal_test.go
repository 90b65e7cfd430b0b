package registry

import (
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/host/secret"
)

func TestMaskConfigFollowsTheSchema(t *testing.T) {
	schema := parseSchema(json.RawMessage(`{"type":"object","properties":{
		"pin":{"type":"string","writeOnly":true},
		"list":{"type":"array","items":{"type":"string","writeOnly":true}},
		"hosts":{"type":"object","additionalProperties":{"type":"object","properties":{"pass":{"type":"string","writeOnly":true}}}}}}`))
	long := "abcdefghijklmnopqrstuvwxyz"
	cfg := json.RawMessage(`{"pin":"1234","list":["` + long + `"],"hosts":{"a":{"pass":"p1","user":"u"}},"note":"n","password":7,"db_password":"x"}`)
	got := map[string]any{}
	if err := json.Unmarshal(maskConfig(cfg, schema), &got); err != nil {
		t.Fatal(err)
	}
	hosts := got["hosts"].(map[string]any)["a"].(map[string]any)
	checks := []struct {
		name      string
		got, want any
	}{
		{"writeOnly string", got["pin"], secret.Mask("1234")},
		{"writeOnly array items", got["list"].([]any)[0], secret.Mask(long)},
		{"additionalProperties", hosts["pass"], secret.Mask("p1")},
		{"plain member", hosts["user"], "u"},
		{"plain string", got["note"], "n"},
		{"number under a secret name", got["password"], float64(7)},
		{"string under a secret name", got["db_password"], secret.Mask("x")},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	// No schema: the name heuristic alone; not JSON: unchanged.
	if out := string(maskConfig(json.RawMessage(`{"token":"t","mode":"m"}`), nil)); out != `{"mode":"m","token":"********"}` {
		t.Errorf("without a schema: %s", out)
	}
	if out := string(maskConfig(json.RawMessage(`nope`), schema)); out != "nope" {
		t.Errorf("non-JSON changed: %s", out)
	}
}

func TestKeepMaskedRestoresOnlyMasks(t *testing.T) {
	schema := parseSchema(json.RawMessage(`{"properties":{"pin":{"writeOnly":true},"list":{"items":{"writeOnly":true}}}}`))
	prev := json.RawMessage(`{"pin":"1234","list":["one","two"],"tag":"a"}`)
	next := json.RawMessage(`{"pin":"` + secret.Mask("1234") + `","list":["` + secret.Mask("one") + `","new"],"tag":"` + secret.Mask("a") + `"}`)
	out, err := keepMasked(next, prev, schema)
	if err != nil {
		t.Fatal(err)
	}
	// tag is not secret: its literal "********" is what the caller meant.
	if want := `{"list":["one","new"],"pin":"1234","tag":"********"}`; string(out) != want {
		t.Fatalf("got %s, want %s", out, want)
	}
	// A real new value is kept as sent; nothing masked means no rewrite.
	same := json.RawMessage(`{"pin":"5678"}`)
	if out, _ := keepMasked(same, prev, schema); string(out) != string(same) {
		t.Fatalf("new value rewritten: %s", out)
	}
	if _, err := keepMasked(json.RawMessage(`{bad`), prev, schema); err == nil {
		t.Fatal("invalid next config accepted")
	}
}
