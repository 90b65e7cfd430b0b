package inference

import (
	"github.com/wasmgate/gateway/host/inference/convert"
)

// conversion carries a Responses or Completions request through a provider
// whose adapter only speaks chat: the request was converted on the way in,
// the answer (or each stream chunk) is converted on the way out.
type conversion struct {
	model       string
	echo        *convert.Echo
	kind        string // TypeResponses or TypeCompletion
	responses   *convert.ResponsesStream
	completions *convert.CompletionStream
}

// needsConversion reports whether reqType must go through chat for adapter.
func needsConversion(reqType string, a Adapter, passthrough bool) bool {
	if passthrough || (reqType != TypeResponses && reqType != TypeCompletion) {
		return false
	}
	return !a.Supports(reqType) && a.Supports(TypeChat)
}

// toChat converts the request body and prepares the way back.
func toChat(reqType string, body []byte, model string, stream bool) ([]byte, *conversion, error) {
	cv := &conversion{model: model, kind: reqType}
	var chat []byte
	var err error
	if reqType == TypeResponses {
		chat, cv.echo, err = convert.ResponsesToChatEcho(body)
		if stream {
			cv.responses = convert.NewResponsesStream(model, cv.echo)
		}
	} else {
		chat, err = convert.CompletionToChat(body)
		if stream {
			cv.completions = convert.NewCompletionStream(model)
		}
	}
	return chat, cv, err
}

func (cv *conversion) response(chat []byte) ([]byte, error) {
	if cv.kind == TypeResponses {
		return convert.ChatToResponse(chat, cv.model, cv.echo)
	}
	return convert.ChatToCompletion(chat, cv.model)
}

func (cv *conversion) chunk(chunk []byte) ([]convert.Event, error) {
	if cv.responses != nil {
		return cv.responses.Chunk(chunk)
	}
	return cv.completions.Chunk(chunk)
}
