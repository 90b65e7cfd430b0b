package fakeupstream

import (
	"context"
	"net/http"
	"strings"
)

// origURLKey carries the URL as the client sent it, before the prefix was
// stripped: a SigV4 signature covers the full path.
type origURLKey struct{}

// Set is one fake per family behind a single handler, as cmd/mockupstream
// serves them.
type Set struct {
	// Servers holds the fake for each family.
	Servers map[Family]*Server
	handler http.Handler
}

// NewSet builds a fake for every family with the same options. Each family
// is mounted under /<family> (e.g. /anthropic/v1/messages); the OpenAI fake
// is also mounted at the root, so an OpenAI client can use the bare base URL.
func NewSet(opts Options) *Set {
	set := &Set{Servers: map[Family]*Server{}}
	mux := http.NewServeMux()
	for _, f := range Families {
		s := New(f, opts)
		set.Servers[f] = s
		prefix := "/" + string(f)
		strip := http.StripPrefix(prefix, s)
		mux.HandleFunc(prefix+"/", func(w http.ResponseWriter, r *http.Request) {
			strip.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), origURLKey{}, r.URL)))
		})
	}
	mux.Handle("/", set.Servers[OpenAI])
	set.handler = mux
	return set
}

// ServeHTTP dispatches to the family's fake.
func (set *Set) ServeHTTP(w http.ResponseWriter, r *http.Request) { set.handler.ServeHTTP(w, r) }

// Close releases every fake's hanging handlers.
func (set *Set) Close() {
	for _, s := range set.Servers {
		s.Close()
	}
}

// BaseURL is the base URL of family f on a Set served at root.
func BaseURL(root string, f Family) string { return strings.TrimRight(root, "/") + "/" + string(f) }
