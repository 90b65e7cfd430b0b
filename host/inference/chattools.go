package inference

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/wasmgate/gateway/host/reqid"

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

// ChatScope is implemented by a Gate whose callers carry their own rules
// for the ChatTools hook (governance: a virtual key's MCP tools). Inference
// asks it for every chat request before the marker check.
type ChatScope interface {
	// ChatScoped reports whether any caller has such rules now: while none
	// has, inference skips the credential lookup and ChatScope.
	ChatScoped() bool
	// ChatScope returns the context the hook runs with for this caller
	// (its rules attached) and whether the hook must see the request even
	// without the marker (the caller's tools are injected by default). It
	// never refuses: the gate's Admit does that.
	ChatScope(ctx context.Context, vkHeader, apiKey, bearer string) (context.Context, bool)
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
	o := &Outcome{ID: reqid.New(t.Start), Start: t.Start, Route: strings.Clone(m.c.Path()),
		RequestType: RequestTypeMCPTool, Provider: "mcp", Model: t.Name, StatusCode: http.StatusOK,
		Latency: t.Latency, Err: t.Err, RequestBody: t.Arguments, ResponseBody: t.Result, CallerCredential: m.caller}
	if t.Err != nil {
		o.StatusCode = t.Err.StatusCode
	}
	m.s.o.Recorder.Record(o)
}

// wantsChatTools is the hot-path check: whether the caller's scope asks
// for the hook (the scope is then in c's user context), else one scan for
// the hook's marker.
func (s *Service) wantsChatTools(c *fiber.Ctx, reqType string, body []byte, caller string) bool {
	if reqType != TypeChat || s.o.ChatTools == nil {
		return false
	}
	if s.chatScope != nil && s.chatScope.ChatScoped() {
		vk, apiKey, bearer := gateCredentials(c, caller)
		ctx, always := s.chatScope.ChatScope(c.UserContext(), vk, apiKey, bearer)
		if always {
			c.SetUserContext(ctx)
			return true
		}
	}
	return bytes.Contains(body, s.chatToolsMarker)
}
