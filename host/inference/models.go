package inference

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/providers"
)

// modelEntry is one row of GET /v1/models, OpenAI-shaped.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// listModels asks every enabled key of every configured provider (or of the
// ?provider= one) for its models, concurrently. A key whose listing fails
// gets status list_models_failed with the cause; the others still answer.
func (s *Service) listModels(c *fiber.Ctx) error {
	only := c.Query("provider")
	ctx, cancel := context.WithTimeout(c.UserContext(), 15*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		data     []modelEntry
		statuses []apierr.KeyStatus
		seen     = map[string]bool{}
	)
	for _, p := range s.o.Providers.Providers() {
		if only != "" && p.Name != only {
			continue
		}
		for _, k := range p.Keys {
			if !k.Enabled {
				continue
			}
			wg.Add(1)
			go func(p providers.Provider, k providers.Key) {
				defer wg.Done()
				ids, err := s.keyModels(ctx, p, k)
				status, desc := "success", ""
				if err != nil {
					status, desc = "list_models_failed", err.Error()
				}
				if k.Status != status || k.Description != desc {
					_ = s.o.Providers.SetKeyStatus(context.WithoutCancel(ctx), p.Name, k.ID, status, desc)
				}
				mu.Lock()
				defer mu.Unlock()
				ks := apierr.KeyStatus{KeyID: k.ID, Status: status, Provider: p.Name}
				if err != nil {
					ks.Error = desc
				}
				statuses = append(statuses, ks)
				for _, id := range ids {
					full := p.Name + "/" + id
					if !seen[full] {
						seen[full] = true
						data = append(data, modelEntry{ID: full, Object: "model", OwnedBy: p.Name})
					}
				}
			}(p, k)
		}
	}
	wg.Wait()
	sort.Slice(data, func(i, j int) bool { return data[i].ID < data[j].ID })
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].KeyID < statuses[j].KeyID })
	if data == nil {
		data = []modelEntry{}
	}
	if statuses == nil {
		statuses = []apierr.KeyStatus{}
	}
	return c.JSON(fiber.Map{"object": "list", "data": data, "extra_fields": fiber.Map{"key_statuses": statuses}})
}

// keyModels lists one key's models: its allow list when it has one (the
// key may only serve those), else the provider's own listing.
func (s *Service) keyModels(ctx context.Context, p providers.Provider, k providers.Key) ([]string, error) {
	if len(k.Models) > 0 {
		return append(append([]string(nil), k.Models...), aliasNames(k.Aliases)...), nil
	}
	info, _ := providers.Lookup(p.Name)
	adapter, ok := s.o.Adapters.Adapter(string(info.Family))
	if !ok {
		return nil, fmt.Errorf("no adapter for wire family %q", info.Family)
	}
	cred, err := s.creds.get(ctx, s.o.Providers, info, k)
	if err != nil {
		return nil, err
	}
	var spec *UpstreamRequest
	if adapter.Passthrough() {
		spec = &UpstreamRequest{Method: http.MethodGet, Path: "/models"}
	} else if adapter.Supports(TypeListModels) {
		spec, err = adapter.AdaptRequest(ctx, &AdaptRequestInput{RequestType: TypeListModels, Provider: p.Name,
			BaseURL: cred.key.BaseURL, KeyConfig: cred.keyConfig, Body: json.RawMessage(`{}`)})
		if err != nil {
			return nil, err
		}
	} else {
		return nil, fmt.Errorf("provider %q cannot list models; set the key's models list", p.Name)
	}
	pw, err := s.o.Providers.ResolveProxyPassword(ctx, p)
	if err != nil {
		return nil, err
	}
	tr, err := s.transports.get(&p, pw)
	if err != nil {
		return nil, err
	}
	req, err := buildHTTPRequest(ctx, spec, cred.key.BaseURL, p.NetworkConfig.ExtraHeaders)
	if err != nil {
		return nil, err
	}
	if err := cred.auth.Apply(ctx, req); err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models: %v", errText(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list models: provider answered %d: %s", resp.StatusCode, upstreamMessage(resp.StatusCode, body))
	}
	if !adapter.Passthrough() {
		body, err = adapter.AdaptResponse(ctx, &AdaptResponseInput{RequestType: TypeListModels, Provider: p.Name,
			Status: resp.StatusCode, Body: rawJSON(body), Context: spec.Context})
		if err != nil {
			return nil, err
		}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("list models: unreadable answer: %v", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" && !contains(k.BlacklistedModels, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	return append(ids, aliasNames(k.Aliases)...), nil
}

func aliasNames(a map[string]string) []string {
	out := make([]string, 0, len(a))
	for name := range a {
		out = append(out, name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
