package promptrepo_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/promptrepo"
)

func createPrompt(t *testing.T, g *testgw.Gateway, body any) promptrepo.Prompt {
	t.Helper()
	var out struct{ Prompt promptrepo.Prompt }
	g.Expect(201, "POST", "/api/prompt-repo/prompts", body).Decode(t, &out)
	return out.Prompt
}

func createSession(t *testing.T, g *testgw.Gateway, body any) promptrepo.Session {
	t.Helper()
	var out struct{ Session promptrepo.Session }
	g.Expect(201, "POST", "/api/prompt-repo/sessions", body).Decode(t, &out)
	return out.Session
}

func commit(t *testing.T, g *testgw.Gateway, session, msg string) promptrepo.Version {
	t.Helper()
	var out struct{ Version promptrepo.Version }
	g.Expect(200, "POST", "/api/prompt-repo/sessions/"+session+"/commit", map[string]string{"commit_message": msg}).Decode(t, &out)
	return out.Version
}

func versions(t *testing.T, g *testgw.Gateway, prompt, query string) ([]promptrepo.Version, int) {
	t.Helper()
	var out struct {
		Versions   []promptrepo.Version
		TotalCount int `json:"total_count"`
	}
	g.Expect(200, "GET", "/api/prompt-repo/prompts/"+prompt+"/versions"+query, nil).Decode(t, &out)
	return out.Versions, out.TotalCount
}

func TestCommitLifecycle(t *testing.T) {
	dir := t.TempDir()
	g := testgw.Start(t, testgw.Options{Dir: dir})

	var fo struct{ Folder promptrepo.Folder }
	g.Expect(201, "POST", "/api/prompt-repo/folders", `{"name":"support"}`).Decode(t, &fo)
	p := createPrompt(t, g, map[string]any{"name": "triage", "folder_id": fo.Folder.ID})
	ses := createSession(t, g, map[string]any{"prompt_id": p.ID,
		"messages":     []any{map[string]any{"role": "system", "content": "You triage tickets."}, map[string]any{"role": "user", "content": "{{ticket}}"}},
		"model_params": map[string]any{"temperature": 0.2}, "provider": "openai", "model": "gpt-4o-mini"})

	v1 := commit(t, g, ses.ID, "first")
	if v1.VersionNumber != 1 || !v1.IsLatest || v1.PromptID != p.ID || v1.CommitMessage != "first" ||
		v1.Provider != "openai" || v1.Model != "gpt-4o-mini" || string(v1.ModelParams) != `{"temperature":0.2}` ||
		len(v1.Messages) != 2 || v1.Messages[1].OrderIndex != 1 || v1.Messages[0].ID == v1.Messages[1].ID || v1.ID < 1 || v1.CreatedAt.IsZero() {
		t.Fatalf("v1: %+v", v1)
	}
	var m map[string]any
	if err := json.Unmarshal(v1.Messages[1].Message, &m); err != nil || m["content"] != "{{ticket}}" {
		t.Fatalf("message not kept as sent: %s", v1.Messages[1].Message)
	}

	// Editing the session does not touch the committed version.
	g.Expect(200, "PUT", "/api/prompt-repo/sessions/"+ses.ID, map[string]any{
		"messages": []any{map[string]any{"role": "system", "content": "You triage tickets politely."}}, "model": "gpt-4.1"})
	v2 := commit(t, g, ses.ID, "politer")
	if v2.VersionNumber != 2 || !v2.IsLatest || v2.ID <= v1.ID || len(v2.Messages) != 1 || string(v2.ModelParams) != `{}` {
		t.Fatalf("v2: %+v", v2)
	}

	// is_latest moved; fetch by id and by number agree.
	var got struct{ Version promptrepo.Version }
	g.Expect(200, "GET", fmt.Sprintf("/api/prompt-repo/versions/%d", v1.ID), nil).Decode(t, &got)
	if got.Version.IsLatest || got.Version.VersionNumber != 1 || len(got.Version.Messages) != 2 {
		t.Fatalf("v1 after v2: %+v", got.Version)
	}
	g.Expect(200, "GET", "/api/prompt-repo/prompts/"+p.ID+"/versions/2", nil).Decode(t, &got)
	if !got.Version.IsLatest || got.Version.ID != v2.ID {
		t.Fatalf("v2 by number: %+v", got.Version)
	}
	vs, total := versions(t, g, p.ID, "?limit=1")
	if total != 2 || len(vs) != 1 || vs[0].VersionNumber != 2 || !vs[0].IsLatest {
		t.Fatalf("list page 1: %d %+v", total, vs)
	}
	vs, _ = versions(t, g, p.ID, "?limit=1&offset=1")
	if len(vs) != 1 || vs[0].VersionNumber != 1 || vs[0].IsLatest {
		t.Fatalf("list page 2: %+v", vs)
	}

	// A new session starts from the latest version, or from the one asked.
	s2 := createSession(t, g, map[string]any{"prompt_id": p.ID})
	if s2.BaseVersionNumber != 2 || s2.Model != "gpt-4.1" || len(s2.Messages) != 1 {
		t.Fatalf("session from latest: %+v", s2)
	}
	s3 := createSession(t, g, map[string]any{"prompt_id": p.ID, "from_version": 1})
	if s3.BaseVersionNumber != 1 || len(s3.Messages) != 2 || s3.Provider != "openai" {
		t.Fatalf("session from v1: %+v", s3)
	}

	// Everything survives a restart.
	g = g.Restart("")
	vs, total = versions(t, g, p.ID, "")
	if total != 2 || vs[0].ID != v2.ID || !vs[0].IsLatest || vs[1].IsLatest {
		t.Fatalf("after restart: %+v", vs)
	}
	if v3 := commit(t, g, s3.ID, "restore v1 as v3"); v3.VersionNumber != 3 || len(v3.Messages) != 2 || v3.ID <= v2.ID {
		t.Fatalf("v3: %+v", v3)
	}

	// A folder with prompts cannot go; a prompt takes its versions and sessions with it.
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/prompt-repo/folders/"+fo.Folder.ID, nil), 409, "folder_not_empty")
	r := g.Expect(200, "DELETE", "/api/prompt-repo/prompts/"+p.ID, nil).Map(t)
	if r["deleted_versions"] != float64(3) || r["deleted_sessions"] != float64(3) {
		t.Fatalf("cascade: %v", r)
	}
	testgw.WantEnvelope(t, g.Do("GET", fmt.Sprintf("/api/prompt-repo/versions/%d", v1.ID), nil), 404, "not_found")
	testgw.WantEnvelope(t, g.Do("GET", "/api/prompt-repo/sessions/"+ses.ID, nil), 404, "not_found")
	g.Expect(200, "DELETE", "/api/prompt-repo/folders/"+fo.Folder.ID, nil)
}

func TestErrorsAreEnvelopes(t *testing.T) {
	g := testgw.New(t)
	p := createPrompt(t, g, `{"name":"p"}`)
	empty := createSession(t, g, map[string]any{"prompt_id": p.ID})

	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		code, param  string
	}{
		{"POST", "/api/prompt-repo/sessions/nope/commit", `{"commit_message":"x"}`, 404, "session_not_found", ""},
		{"POST", "/api/prompt-repo/sessions/" + empty.ID + "/commit", `{"commit_message":"x"}`, 400, "empty_session", "messages"},
		{"POST", "/api/prompt-repo/sessions/" + empty.ID + "/commit", `{"commit_msg":"x"}`, 400, "unknown_field", "commit_msg"},
		{"POST", "/api/prompt-repo/sessions/" + empty.ID + "/commit", `{"commit_message":5}`, 400, "invalid_type", "commit_message"},
		{"POST", "/api/prompt-repo/prompts", `{"description":"no name"}`, 400, "missing_field", "name"},
		{"POST", "/api/prompt-repo/prompts", `{"name":"x","folder_id":"nope"}`, 400, "invalid_value", "folder_id"},
		{"POST", "/api/prompt-repo/sessions", `{}`, 400, "missing_field", "prompt_id"},
		{"POST", "/api/prompt-repo/sessions", `{"prompt_id":"nope"}`, 400, "invalid_value", "prompt_id"},
		{"POST", "/api/prompt-repo/sessions", `{"prompt_id":"` + p.ID + `","from_version":7}`, 400, "invalid_value", "from_version"},
		{"POST", "/api/prompt-repo/sessions", `{"prompt_id":"` + p.ID + `","messages":["hi"]}`, 400, "invalid_type", "messages[0]"},
		{"POST", "/api/prompt-repo/sessions", `{"prompt_id":"` + p.ID + `","messages":[{"content":"hi"}]}`, 400, "missing_field", "messages[0].role"},
		{"POST", "/api/prompt-repo/sessions", `{"prompt_id":"` + p.ID + `","model_params":[1]}`, 400, "invalid_type", "model_params"},
		{"POST", "/api/prompt-repo/sessions", `{"prompt_id":"` + p.ID + `","provider":"nosuch"}`, 400, "invalid_value", "provider"},
		{"PUT", "/api/prompt-repo/sessions/nope", `{"messages":[]}`, 404, "not_found", ""},
		{"GET", "/api/prompt-repo/prompts/nope", nil, 404, "not_found", ""},
		{"GET", "/api/prompt-repo/prompts/nope/versions", nil, 404, "not_found", ""},
		{"GET", "/api/prompt-repo/prompts/" + p.ID + "/versions/0", nil, 400, "invalid_parameter", "number"},
		{"GET", "/api/prompt-repo/prompts/" + p.ID + "/versions/1", nil, 404, "not_found", ""},
		{"GET", "/api/prompt-repo/versions/abc", nil, 400, "invalid_parameter", "id"},
		{"GET", "/api/prompt-repo/prompts?limit=0", nil, 400, "invalid_parameter", "limit"},
	} {
		m := testgw.WantEnvelope(t, g.Do(tc.method, tc.path, tc.body), tc.status, tc.code)
		if p, _ := m["error"].(map[string]any)["param"].(string); p != tc.param {
			t.Errorf("%s %s %v: param %q, want %q", tc.method, tc.path, tc.body, p, tc.param)
		}
	}
	// An empty commit body is allowed once the session has messages.
	g.Expect(200, "PUT", "/api/prompt-repo/sessions/"+empty.ID, `{"messages":[{"role":"user","content":"hi"}]}`)
	g.Expect(200, "POST", "/api/prompt-repo/sessions/"+empty.ID+"/commit", nil)
}

// TestConcurrentCommitsGetDistinctNumbers commits from many sessions of one
// prompt at once: every commit succeeds, numbers are 1..n without gaps or
// repeats, ids are distinct, and exactly one version is the latest.
func TestConcurrentCommitsGetDistinctNumbers(t *testing.T) {
	g := testgw.New(t)
	p := createPrompt(t, g, `{"name":"busy"}`)
	const n = 24
	sessions := make([]string, n)
	for i := range sessions {
		sessions[i] = createSession(t, g, map[string]any{"prompt_id": p.ID,
			"messages": []any{map[string]any{"role": "user", "content": fmt.Sprint("variant ", i)}}}).ID
	}
	var wg sync.WaitGroup
	results := make([]promptrepo.Version, n)
	errs := make(chan string, n)
	for i := range sessions {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := g.Do("POST", "/api/prompt-repo/sessions/"+sessions[i]+"/commit", fmt.Sprintf(`{"commit_message":"c%d"}`, i))
			if r.Status != 200 {
				errs <- fmt.Sprintf("commit %d: %d %s", i, r.Status, r.Body)
				return
			}
			var out struct{ Version promptrepo.Version }
			if err := json.Unmarshal(r.Body, &out); err != nil {
				errs <- err.Error()
				return
			}
			results[i] = out.Version
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	numbers := make([]int, 0, n)
	ids := map[int64]bool{}
	msgIDs := map[int64]bool{}
	for _, v := range results {
		numbers = append(numbers, int(v.VersionNumber))
		ids[v.ID] = true
		msgIDs[v.Messages[0].ID] = true
	}
	sort.Ints(numbers)
	for i, num := range numbers {
		if num != i+1 {
			t.Fatalf("version numbers %v, want 1..%d", numbers, n)
		}
	}
	if len(ids) != n || len(msgIDs) != n {
		t.Fatalf("ids not distinct: %d versions, %d messages", len(ids), len(msgIDs))
	}
	vs, total := versions(t, g, p.ID, "")
	latest := 0
	for _, v := range vs {
		if v.IsLatest {
			latest++
			if v.VersionNumber != n {
				t.Fatalf("latest is %d, want %d", v.VersionNumber, n)
			}
		}
	}
	if total != n || latest != 1 {
		t.Fatalf("%d versions, %d latest", total, latest)
	}
}

func TestRoutesDeclarePermissions(t *testing.T) {
	g := testgw.New(t)
	n := 0
	for _, r := range g.Server.Routes() {
		if len(r.Path) < len("/api/prompt-repo") || r.Path[:len("/api/prompt-repo")] != "/api/prompt-repo" {
			continue
		}
		n++
		want := map[string]string{"GET": "PromptRepository:View", "POST": "PromptRepository:Create",
			"PUT": "PromptRepository:Update", "DELETE": "PromptRepository:Delete"}[r.Method]
		if r.Permission != want {
			t.Errorf("%s %s: %s, want %s", r.Method, r.Path, r.Permission, want)
		}
	}
	if n != 19 {
		t.Fatalf("%d prompt-repo routes registered, want 19", n)
	}
}

// TestMissingPermissionIs403 drives the routes with management API keys
// whose scopes lack the needed permission.
func TestMissingPermissionIs403(t *testing.T) {
	g := testgw.New(t, "GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=correct horse")
	g.Auth = func(r *http.Request) { r.SetBasicAuth("admin", "correct horse") }
	key := func(scopes ...string) func(*http.Request) {
		m := g.Expect(201, "POST", "/api/auth/api-keys", map[string]any{"name": "k", "scopes": scopes}).Map(t)
		tok := m["key"].(string)
		return func(r *http.Request) {
			r.Header.Del("Authorization")
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	reader := key("PromptRepository:View")
	writer := key("PromptRepository:Create", "PromptRepository:View")
	p := createPrompt(t, g, `{"name":"guarded"}`)

	if r := g.Do("GET", "/api/prompt-repo/prompts/"+p.ID, nil, reader); r.Status != 200 {
		t.Fatalf("reader view: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		method, path string
		as           func(*http.Request)
	}{
		{"POST", "/api/prompt-repo/prompts", reader},
		{"POST", "/api/prompt-repo/sessions/x/commit", reader},
		{"PUT", "/api/prompt-repo/prompts/" + p.ID, writer},
		{"DELETE", "/api/prompt-repo/prompts/" + p.ID, writer},
		{"PUT", "/api/governance/pricing/openai/gpt-4o", reader},
		{"GET", "/api/governance/pricing", writer},
	} {
		testgw.WantEnvelope(t, g.Do(tc.method, tc.path, `{"name":"x"}`, tc.as), 403, "missing_permission")
	}
	if r := g.Do("POST", "/api/prompt-repo/prompts", `{"name":"x"}`, writer); r.Status != 201 {
		t.Fatalf("writer create: %d %s", r.Status, r.Body)
	}
}
