package inference

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
)

// ChatTools is the hook through which another capability (the MCP gateway)
// adds tools to chat completion requests and runs the tool-call loop in the
// gateway. Inference knows nothing of MCP: it hands the hook only the
// OpenAI-wire chat bodies that contain the hook's Marker, so requests that
// do not use it pay one bytes.Contains.
type ChatTools interface {
	// Marker is a byte string, typically the quoted field name, whose
	// absence from a body proves the hook has nothing to do with it.
	Marker() []byte
	// ServeChat takes a chat completion body containing the marker. It
	// either returns a body to send on through the normal pipeline
	// (Forward: the field stripped, tools injected; streams work) or the
	// final answer of a loop it ran with models (Response). A returned
	// *apierr.Error is sent to the client as the error envelope.
	ServeChat(ctx context.Context, body []byte, models ModelCaller) (*ChatToolsResult, *apierr.Error)
}

// ChatToolsResult is what a ChatTools hook decided about one request.
type ChatToolsResult struct {
	// Forward, when set, is sent on as the request body.
	Forward []byte
	// Response, when Forward is nil, is the unified answer sent to the client.
	Response []byte
	// Headers are added to the client's response.
	Headers map[string]string
}

// ModelCaller runs model calls and records tool calls on behalf of one
// client request.
type ModelCaller interface {
	// Complete runs one non-streamed chat completion through the whole
	// pipeline (plugins, routing, retries, fallbacks, logs and metrics)
	// and returns the unified answer instead of sending it to the client.
	Complete(ctx context.Context, body []byte) ([]byte, *apierr.Error)
	// RecordTool logs a tool call executed for the request (request type
	// "mcp_tool" in logs and metrics).
	RecordTool(t ToolCall)
}

// ToolCall is one executed tool call, as logged.
type ToolCall struct {
	// Name is the tool as the model saw it ("<client>-<tool>").
	Name      string
	Start     time.Time
	Latency   time.Duration
	Arguments []byte
	Result    []byte
	// Err is the failure, nil when the tool answered (even with isError).
	Err *apierr.Error
}

// RequestTypeMCPTool is the request type of logged tool calls.
const RequestTypeMCPTool = "mcp_tool"

// serveChatTools hands a chat request carrying the hook's marker to the
// hook, then either continues on the normal path or sends its answer.
func (s *Service) serveChatTools(c *fiber.Ctx, path string, body []byte, caller string) error {
	mc := &modelCaller{s: s, c: c, path: path, caller: caller}
	res, aerr := s.o.ChatTools.ServeChat(c.UserContext(), body, mc)
	if aerr != nil {
		return aerr
	}
	if res.Forward != nil {
		for k, v := range res.Headers {
			c.Set(k, v)
		}
		return s.serve(c, TypeChat, path, res.Forward, nil, caller)
	}
	for k, v := range res.Headers {
		c.Set(k, v)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(http.StatusOK).Send(res.Response)
}

// modelCaller implements ModelCaller on the client's Fiber request: every
// model call of a loop is a full pipeline run with its own outcome.
type modelCaller struct {
	s      *Service
	c      *fiber.Ctx
	path   string
	caller string
}

func (m *modelCaller) Complete(ctx context.Context, body []byte) ([]byte, *apierr.Error) {
	// The pipeline reads the context from the Fiber request; the loop's
	// context (its deadline) applies to this call only.
	prev := m.c.UserContext()
	m.c.SetUserContext(ctx)
	defer m.c.SetUserContext(prev)
	var out []byte
	err := m.s.serveCaptured(m.c, TypeChat, m.path, body, m.caller, nil, &out)
	if err != nil {
		return nil, apierr.As(err)
	}
	return out, nil
}

func (m *modelCaller) RecordTool(t ToolCall) {
	if m.s.o.Recorder == nil {
		return
	}
	o := &Outcome{ID: uuid.Must(uuid.NewV7()).String(), Start: t.Start, Route: strings.Clone(m.c.Path()),
		RequestType: RequestTypeMCPTool, Provider: "mcp", Model: t.Name, StatusCode: http.StatusOK,
		Latency: t.Latency, Err: t.Err, RequestBody: t.Arguments, ResponseBody: t.Result, CallerCredential: m.caller}
	if t.Err != nil {
		o.StatusCode = t.Err.StatusCode
	}
	m.s.o.Recorder.Record(o)
}

// wantsChatTools is the hot-path check: one scan for the hook's marker.
func (s *Service) wantsChatTools(reqType string, body []byte) bool {
	return reqType == TypeChat && s.o.ChatTools != nil && bytes.Contains(body, s.chatToolsMarker)
}
