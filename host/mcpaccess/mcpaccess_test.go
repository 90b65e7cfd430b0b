package mcpaccess_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/mcpaccess"
)

func TestPolicy(t *testing.T) {
	var none *mcpaccess.Policy
	if !none.Allows("any", "tool") || mcpaccess.FromContext(context.Background()) != nil {
		t.Fatal("no policy must allow everything")
	}
	p := mcpaccess.New(`virtual key "ci"`, []mcpaccess.Rule{
		{ClientID: "c1", Tools: []string{"echo"}},
		{ClientID: "c2", Tools: []string{"*"}},
		{ClientID: "c3", Tools: []string{}},
	})
	for _, c := range []struct {
		client, tool string
		want         bool
	}{
		{"c1", "echo", true}, {"c1", "add", false}, {"c2", "anything", true}, {"c3", "echo", false}, {"c4", "echo", false},
	} {
		if got := p.Allows(c.client, c.tool); got != c.want {
			t.Errorf("Allows(%s, %s) = %v", c.client, c.tool, got)
		}
	}
	if got := mcpaccess.FromContext(mcpaccess.NewContext(context.Background(), p)); got != p {
		t.Fatal("context round trip")
	}
	e := p.Forbidden("files-add")
	if e.StatusCode != 403 || e.Detail.Code != "tool_not_allowed" || !strings.Contains(e.Detail.Message, `virtual key "ci"`) ||
		!strings.Contains(e.Detail.Message, `"files-add"`) {
		t.Fatalf("forbidden: %+v", e)
	}
}
