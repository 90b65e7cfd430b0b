package server

import (
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/logs"
)

// logRecorder turns an inference outcome into a request-log record. It runs
// after the response was written, so its cost stays off the hot path.
type logRecorder struct{ l *logs.Logger }

func (r logRecorder) Record(o *inference.Outcome) {
	if r.l == nil {
		return
	}
	rec := &logs.Record{
		ID: o.ID, Timestamp: o.Start.UTC(), Object: o.RequestType, Route: o.Route,
		Provider: o.Provider, Model: o.Model, ResolvedModel: o.ResolvedModel, StatusCode: o.StatusCode,
		LatencyMS: float64(o.Latency.Microseconds()) / 1000, TTFTMS: float64(o.TTFT.Microseconds()) / 1000,
		Stream: o.Stream, PromptTokens: o.Usage.PromptTokens, CompletionTokens: o.Usage.CompletionTokens,
		TotalTokens: o.Usage.TotalTokens, CachedReadTokens: o.Usage.CachedReadTokens, ReasoningTokens: o.Usage.ReasoningTokens,
		KeyID: o.KeyID, VirtualKeyID: o.VirtualKeyID, IsFallback: o.IsFallback, FallbackIndex: o.FallbackIndex, Retries: o.Retries,
		Cost: o.Cost,
	}
	if o.Err != nil {
		rec.Error = &logs.ErrorInfo{Type: o.Err.Type, Code: o.Err.Detail.Code, Message: o.Err.Detail.Message}
	}
	if r.l.CaptureContent() {
		rec.Input, rec.Output = string(o.RequestBody), string(o.ResponseBody)
	}
	r.l.Record(rec)
}
