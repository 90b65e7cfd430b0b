package inference

import (
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Input-token estimates for translated Anthropic streams.
//
// Anthropic's message_start carries the input token count, but an
// upstream of another family reports usage only at the end (OpenAI's
// include_usage chunk, Cohere's message-end, Gemini's last chunk), after
// message_start must have gone out. The host therefore seeds the
// Anthropic egress_stream state with an estimate, which message_start
// carries; message_delta carries the upstream's real count. The Anthropic
// SDKs overwrite the estimate with message_delta's count; LangChain's
// ChatAnthropic reads input tokens from message_start only and so reports
// the estimate. Logs, metrics and cost always use the real count.

// estimateBytesPerToken is the usual rule of thumb for English text and
// JSON under BPE tokenizers.
const estimateBytesPerToken = 4

// perMessageTokens is the framing a chat template adds per message.
const perMessageTokens = 4

// estimateInputTokens estimates a unified chat request's input tokens from
// the text of its messages and its tool declarations, without decoding it.
// Images are not counted (their cost depends on the provider).
func estimateInputTokens(unified []byte) int64 {
	var textBytes, messages int64
	jsonx.ForEachMessageText(unified, func(s, e int) { textBytes += int64(e - s) })
	if ms, _, ok := jsonx.Field(unified, "messages"); ok {
		jsonx.ForEachElement(unified, ms, func(int, int) { messages++ })
	}
	if s, e, ok := jsonx.Field(unified, "tools"); ok {
		textBytes += int64(e - s)
	}
	n := (textBytes+estimateBytesPerToken-1)/estimateBytesPerToken + messages*perMessageTokens
	return max(n, 1)
}

// anthropicStreamSeed is the first egress_stream state of a translated
// Anthropic stream: the input-token estimate ("e") for message_start.
func anthropicStreamSeed(unified []byte) []byte {
	b := append([]byte(`{"e":`), strconv.AppendInt(nil, estimateInputTokens(unified), 10)...)
	return append(b, '}')
}
