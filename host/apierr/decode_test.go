package apierr_test

import (
	"testing"

	"github.com/wasmgate/gateway/host/apierr"
)

func TestDecodeJSONNamesTheProblem(t *testing.T) {
	cases := []struct{ body, code, param string }{
		{``, "empty_body", ""},
		{`{"name":`, "invalid_json", ""},
		{`{"name": 1}`, "invalid_type", "name"},
		{`{"nested": {"url": true}}`, "invalid_type", "nested.url"},
		{`{"bogus": 1}`, "unknown_field", "bogus"},
		{`{"value": 3}`, "invalid_value", ""},
		{`{"value": "env."}`, "invalid_value", ""},
		{`"str"`, "invalid_type", ""},
		{`{} {}`, "invalid_json", ""},
	}
	for _, c := range cases {
		var v sample
		e := apierr.DecodeJSON([]byte(c.body), &v)
		if e == nil {
			t.Errorf("%q accepted", c.body)
			continue
		}
		if e.StatusCode != 400 || e.Detail.Code != c.code || e.Detail.Param != c.param {
			t.Errorf("%q: got %d %s param=%q (%s), want %s param=%q", c.body, e.StatusCode, e.Detail.Code, e.Detail.Param, e.Detail.Message, c.code, c.param)
		}
	}
}
