// Package inference serves the unified /v1 API: it reads the routing facts
// of a request, walks the plan of targets (primary, then fallbacks), picks a
// key per attempt, has the provider family's adapter build the upstream
// request (or passes OpenAI-wire bytes through untouched), sends it with a
// pooled client, retries with backoff, and answers in the unified format,
// streaming as the upstream streams.
package inference

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/providers"
)

// Options configures the Service.
type Options struct {
	Providers *providers.Service
	Adapters  AdapterSource
	Log       *slog.Logger
	Recorder  Recorder
	// Plugins returns the request plugins of a hook (nil: none).
	Plugins PluginChain
	// MaxResponseBytes caps a non-streamed upstream body held in memory.
	MaxResponseBytes int
	// StreamBatchMax caps events handed to an adapter in one call.
	StreamBatchMax int
	// Gate admits each request before a provider is called (governance);
	// nil admits everything.
	Gate Gate
	// Pricer prices finished requests (Outcome.Cost, billed_usage.cost);
	// nil leaves every cost unknown.
	Pricer Pricer
	// ChatTools, when set, adds tools to chat requests that carry its
	// marker and may run the tool-call loop (the MCP gateway).
	ChatTools ChatTools
}

// Service is the inference capability.
type Service struct {
	o          Options
	log        *slog.Logger
	creds      credentialCache
	transports transportCache
	limits     providerLimits
	now        func() time.Time
	// chatToolsMarker is o.ChatTools.Marker(), read once.
	chatToolsMarker []byte
	// chatScope is o.Gate's ChatScope, when it has one and ChatTools is set.
	chatScope ChatScope
}

// New builds the service.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 64 << 20
	}
	if o.StreamBatchMax <= 0 {
		o.StreamBatchMax = 64
	}
	s := &Service{o: o, log: o.Log, now: time.Now}
	if o.ChatTools != nil {
		s.chatToolsMarker = o.ChatTools.Marker()
		s.chatScope, _ = o.Gate.(ChatScope)
	}
	return s
}

// Routes mounts the unified API on app.
func (s *Service) Routes(app fiber.Router) {
	app.Post("/v1/chat/completions", s.handle(TypeChat, "/chat/completions"))
	app.Post("/v1/completions", s.handle(TypeCompletion, "/completions"))
	app.Post("/v1/responses", s.handle(TypeResponses, "/responses"))
	app.Post("/v1/embeddings", s.handle(TypeEmbedding, "/embeddings"))
	// Rerank and token counting have no OpenAI wire: they need an adapter
	// that supports them (cohere rerank; anthropic and gemini count tokens).
	app.Post("/v1/rerank", s.handle(TypeRerank, "/rerank"))
	app.Post("/v1/count_tokens", s.handle(TypeCountTokens, "/count_tokens"))
	app.Get("/v1/models", s.listModels)
	// Drop-in prefixes: clients switch by changing only the base URL.
	s.openAIRoutes(app, "/openai/v1", "openai")
	s.nativeRoutes(app)
	for _, fw := range Frameworks {
		g := app.Group("/" + fw)
		s.openAIRoutes(g, "/v1", "openai")
		s.nativeRoutes(g)
	}
}

// Close releases pooled connections.
func (s *Service) Close() error {
	s.transports.closeAll()
	return nil
}
