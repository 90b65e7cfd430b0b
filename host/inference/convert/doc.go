// Package convert lets a client speak the OpenAI Responses API
// (POST /v1/responses) or the legacy Completions API (POST /v1/completions)
// to a provider whose adapter only translates chat completions (Anthropic,
// Gemini, Bedrock, Cohere): the host converts the request to a chat request,
// runs the chat pipeline, and converts the chat answer back.
//
// Every function here is pure (bytes in, bytes out, no I/O), so the host
// decides where the conversion runs. Where each one plugs into the
// inference pipeline (host/inference):
//
//   - ResponsesToChat / CompletionToChat: in Service.handle, after
//     parseRequest and the pre_request hooks, when the chosen adapter is not
//     a passthrough and does not Support the request type. The result is
//     sent on as a TypeChat request; the original request type stays in
//     logs and extra_fields.request_type (converted_request_type names
//     "chat"). Their errors are *apierr.Error 400s naming the offending
//     field, returned to the client as is.
//   - ChatToResponse / ChatToCompletion: in respond, on the unified chat
//     body AdaptResponse returned, before usageOf and the post_response
//     hooks, so logs, usage and plugins see what the client gets.
//   - ResponsesStream / CompletionStream: in respondStream, on every unified
//     chat chunk AdaptStream returned (after the stream plugins, which
//     speak chat). ResponsesStream returns named SSE events; the Responses
//     wire has no "data: [DONE]" terminator, so the host must not append one
//     for it. CompletionStream keeps the chat framing (data lines and a
//     final [DONE]).
//
// Nothing here is stored: previous_response_id, conversation and stored
// prompts need server-side state and are refused with a 400.
package convert
