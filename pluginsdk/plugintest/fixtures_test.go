package plugintest

import (
	"encoding/json"
	"testing"
)

func TestChatRequest2KB(t *testing.T) {
	b := ChatRequest2KB()
	if !json.Valid(b) || len(b) < 1900 || len(b) > 2300 {
		t.Fatalf("fixture is %d bytes, valid=%v", len(b), json.Valid(b))
	}
}
