package governance

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/routing"
	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
	"github.com/wasmgate/gateway/store/counters"
)

type fixedPricer struct{}

func (fixedPricer) Cost(string, string, inference.Usage) (float64, bool) { return 0.001, true }

// newService builds the service on a real (in-memory) Badger store.
func newService(tb testing.TB) *Service {
	tb.Helper()
	db, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ctrs, err := counters.OpenMemory(context.Background(), counters.MemoryOptions{Store: db, FlushInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ctrs.Close() })
	s, err := New(context.Background(), Options{Store: db, Counters: ctrs, Pricer: fixedPricer{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// putKey stores a virtual key with every level limited and returns its value.
func putKey(tb testing.TB, s *Service) string {
	tb.Helper()
	value, _ := newKeyValue()
	now := time.Now().UTC()
	cu := Customer{ID: "c1", Name: "c", Budget: &Budget{MaxLimit: 1e6, ResetPeriod: PeriodMonth},
		RateLimit: &RateLimit{RequestMaxLimit: 1 << 40, RequestResetPeriod: PeriodMinute}}
	tm := Team{ID: "t1", Name: "t", CustomerID: "c1", Budget: &Budget{MaxLimit: 1e6, ResetPeriod: PeriodDay}}
	vk := VirtualKey{ID: "v1", Name: "v", IsActive: true, TeamID: "t1", Hash: s.keyHashHex(value),
		ProviderConfigs: []ProviderConfig{{Provider: "openai", AllowedModels: []string{"gpt-4o-mini"}}},
		Budget:          &Budget{MaxLimit: 1e6, ResetPeriod: PeriodHour},
		RateLimit:       &RateLimit{RequestMaxLimit: 1 << 40, RequestResetPeriod: PeriodMinute, TokenMaxLimit: 1 << 50, TokenResetPeriod: PeriodMinute},
		CreatedAt:       now, UpdatedAt: now}
	err := s.st.Update(context.Background(), func(tx store.Tx) error {
		return errors.Join(store.PutJSON(tx, nsCustomers, cu.ID, cu), store.PutJSON(tx, nsTeams, tm.ID, tm),
			store.PutJSON(tx, nsVirtualKeys, vk.ID, vk))
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.refresh(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return value
}

// TestTeamUpdateWarningOnlyWhenRefreshFails is rule 5 of the team update:
// the association persists and the answer warns when the cache refresh
// fails; no warning otherwise.
func TestTeamUpdateWarningOnlyWhenRefreshFails(t *testing.T) {
	s := newService(t)
	putKey(t, s)
	if err := s.st.Update(context.Background(), func(tx store.Tx) error {
		return store.PutJSON(tx, nsCustomers, "c2", Customer{ID: "c2", Name: "other"})
	}); err != nil {
		t.Fatal(err)
	}
	s.refreshHook = func() error { return errors.New("cache backend down") }
	out, err := s.associate(context.Background(), "t1", []byte(`{"customer_ids":["c2"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Warning == "" || len(out.AttachedCustomerIDs) != 1 {
		t.Fatalf("want a warning and the attachment: %+v", out)
	}
	// The association is durable despite the failed refresh.
	var ids []string
	_ = s.st.View(context.Background(), func(tx store.Tx) error { ids, err = attached(tx, "t1"); return err })
	if len(ids) != 1 || ids[0] != "c2" {
		t.Fatalf("association not persisted: %v", ids)
	}
	// Without an association input there is nothing to warn about.
	if out, _ := s.associate(context.Background(), "t1", []byte(`{"description":"x"}`)); out.Warning != "" || out.AttachedCustomerIDs != nil {
		t.Fatalf("warning without an attachment: %+v", out)
	}
	s.refreshHook = nil
	if out, _ := s.associate(context.Background(), "t1", []byte(`{"customer_id":"c2"}`)); out.Warning != "" {
		t.Fatalf("warning after a good refresh: %+v", out)
	}
}

func admission(vk string) *inference.Admission {
	return &inference.Admission{RequestType: inference.TypeChat, Bearer: vk,
		Targets: []routing.Target{{Provider: "openai", Model: "gpt-4o-mini"}},
		Body:    []byte(`{"model":"openai/gpt-4o-mini","max_tokens":64,"messages":[{"role":"user","content":"hello there"}]}`)}
}

// BenchmarkAdmit measures the governance work added to one request: admit
// and settle, with a virtual key limited at all three levels, and without
// a virtual key (a provider key passes straight through).
func BenchmarkAdmit(b *testing.B) {
	s := newService(b)
	vk := putKey(b, s)
	out := &inference.Outcome{Provider: "openai", Model: "openai/gpt-4o-mini", ResolvedModel: "gpt-4o-mini",
		Usage: inference.Usage{PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42}}
	ctx := context.Background()
	b.Run("virtual_key", func(b *testing.B) {
		a := admission(vk)
		b.ReportAllocs()
		for b.Loop() {
			t, aerr := s.Admit(ctx, a)
			if aerr != nil {
				b.Fatal(aerr)
			}
			t.Settle(out)
		}
	})
	b.Run("no_virtual_key", func(b *testing.B) {
		a := admission("sk-provider-key")
		b.ReportAllocs()
		for b.Loop() {
			if t, aerr := s.Admit(ctx, a); aerr != nil || t != nil {
				b.Fatal(aerr)
			}
		}
	})
	b.Run("virtual_key_parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			a := admission(vk)
			for pb.Next() {
				t, aerr := s.Admit(ctx, a)
				if aerr != nil {
					b.Fatal(aerr)
				}
				t.Settle(out)
			}
		})
	})
}

// TestEstimate checks the reservation estimate: body bytes / 4 prompt
// tokens, plus max_tokens (or its aliases, or the default) for generating
// request types and nothing for embeddings.
func TestEstimate(t *testing.T) {
	s := newService(t)
	vk := putKey(t, s)
	body := []byte(`{"model":"openai/gpt-4o-mini","max_completion_tokens":100,"input":"0123456789012345678901234567"}`)
	for _, c := range []struct {
		typ  string
		body []byte
		want int64
	}{
		{inference.TypeChat, body, int64(len(body))/4 + 100},
		{inference.TypeChat, []byte(`{"max_output_tokens":7}`), 23/4 + 7},
		{inference.TypeChat, []byte(`{}`), 0 + 1024},
		{inference.TypeEmbedding, body, int64(len(body)) / 4},
	} {
		a := admission(vk)
		a.RequestType, a.Body = c.typ, c.body
		tk, aerr := s.Admit(context.Background(), a)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if got := tk.(*ticket).estTokens; got != c.want {
			t.Errorf("%s %s: estimate %d, want %d", c.typ, c.body, got, c.want)
		}
		tk.Settle(&inference.Outcome{})
	}
}
