package plugintest

import (
	"encoding/json"
	"strings"
)

// ChatRequest2KB returns a realistic OpenAI chat request of about 2 KB
// (valid JSON, four messages) containing one email address and one phone
// number, so guardrail benchmarks do a full scan and a redaction. Shared so
// benchmarks of different plugins and runtimes measure the same input.
func ChatRequest2KB() []byte {
	para := "Our quarterly report covers revenue, churn and the roadmap for the next two releases. " +
		"Please summarise the key risks and suggest three follow-up actions for the team. "
	msgs := []map[string]string{
		{"role": "system", "content": "You are a helpful assistant that answers concisely and cites sources when asked."},
		{"role": "user", "content": strings.Repeat(para, 5) + "Reach me at jane.doe@example.com."},
		{"role": "assistant", "content": strings.Repeat(para, 3)},
		{"role": "user", "content": strings.Repeat(para, 3) + "My number is +1 415 555 0134."},
	}
	b, err := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs, "max_tokens": 512, "temperature": 0.2, "stream": false})
	if err != nil {
		panic(err) // static input: cannot fail
	}
	return b
}
