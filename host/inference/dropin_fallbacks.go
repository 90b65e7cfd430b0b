package inference

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// HeaderFallbacks names fallback models on any drop-in route, for native
// clients that cannot add a body member (or whose decoder would drop it):
// a comma-separated list of "<provider>/<model>".
const HeaderFallbacks = "x-gw-fallbacks"

// nativeFallbacks reads the fallbacks a drop-in request names: the
// x-gw-fallbacks header, or a top-level "fallbacks" member of the native
// JSON body (the syntax of /v1, kept by no native decoder but
// Anthropic's). It returns the JSON array to give the unified request, or
// nil when none is named. The body member is found by a byte scan, so
// requests without fallbacks pay nothing more.
func nativeFallbacks(c *fiber.Ctx, body []byte) ([]byte, *apierr.Error) {
	if h := c.Get(HeaderFallbacks); h != "" {
		var list []string
		for _, m := range strings.Split(h, ",") {
			if m = strings.TrimSpace(m); m != "" {
				list = append(list, m)
			}
		}
		if len(list) == 0 {
			return nil, apierr.BadRequest("invalid_value", HeaderFallbacks,
				`header "x-gw-fallbacks" must list "<provider>/<model>" names separated by commas`)
		}
		return mustJSON(list), nil
	}
	s, e, ok := jsonx.Field(body, "fallbacks")
	if !ok {
		return nil, nil
	}
	var list []string
	if json.Unmarshal(body[s:e], &list) != nil {
		return nil, apierr.BadRequest("invalid_type", "fallbacks", `field "fallbacks" must be an array of "<provider>/<model>" strings`)
	}
	return body[s:e], nil
}

// withFallbacks puts the fallbacks a drop-in request named into its
// unified request; parseRequest then builds the plan from them.
func withFallbacks(unified, fallbacks []byte) []byte {
	if fallbacks == nil {
		return unified
	}
	if out, ok := jsonx.SetField(unified, "fallbacks", fallbacks); ok {
		return out
	}
	return unified
}

// handleDropIn serves an OpenAI-shaped drop-in route: as handleAs (chat
// tools included), with the x-gw-fallbacks header honoured (the body
// member works as on /v1).
func (s *Service) handleDropIn(reqType, path, provider string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		body := c.Body()
		if c.Get(HeaderFallbacks) != "" {
			fb, aerr := nativeFallbacks(c, body)
			if aerr != nil {
				return aerr
			}
			body = withFallbacks(body, fb)
		}
		body = defaultProvider(body, provider)
		caller := callerCredential(c)
		if s.wantsChatTools(c, reqType, body, caller) {
			return s.serveChatTools(c, path, body, caller)
		}
		return s.serve(c, reqType, path, body, nil, caller)
	}
}
