package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// Routes registers the management API. Reconnecting and completing OAuth
// open connections under the client's identity, so they need MCP:Update.
// The OAuth callback is public: the provider redirects the user's browser
// there, and the single-use, expiring state is what authenticates it.
func (s *Service) Routes(api *auth.Router) {
	view, create := auth.Perm("MCP", "View"), auth.Perm("MCP", "Create")
	upd, del := auth.Perm("MCP", "Update"), auth.Perm("MCP", "Delete")
	api.Post("/mcp/client", create, s.create)
	api.Get("/mcp/clients", view, s.list)
	api.Get("/mcp/client/:id", view, s.get)
	api.Put("/mcp/client/:id", upd, s.put)
	api.Delete("/mcp/client/:id", del, s.delete)
	api.Post("/mcp/client/:id/reconnect", upd, s.reconnect)
	api.Post("/mcp/client/:id/complete-oauth", upd, s.completeOAuth)
	api.Get("/oauth/config/:id/status", view, s.oauthStatus)
	api.Delete("/oauth/config/:id", upd, s.revoke)
	api.Get("/oauth/callback", auth.Public, s.callback)
}

// stdioPerm is the extra permission needed to create or change a stdio
// client: it runs a command on the gateway host, a governance-level power
// that MCP:Create alone (held by the developer role) must not grant.
var stdioPerm = auth.Perm("Settings", "Update")

func requireStdioPerm(c *fiber.Ctx) *apierr.Error {
	if p := auth.FromCtx(c); p != nil && (p.Bypass || auth.Allows(p.Scopes, stdioPerm)) {
		return nil
	}
	return apierr.Forbidden("missing_permission",
		"stdio MCP clients run a command on the gateway host: this credential lacks permission "+stdioPerm.String())
}

// InferenceRoutes registers the /v1 tool endpoints, which callers use with
// inference credentials like the rest of /v1.
func (s *Service) InferenceRoutes(app fiber.Router) {
	app.Get("/v1/mcp/tools", s.listToolsHandler)
	app.Post("/v1/mcp/tool/execute", s.executeTool)
}

// FlowInitiation is the spec's OAuthFlowInitiation, the answer to creating
// an OAuth client.
type FlowInitiation struct {
	Status        string    `json:"status"`
	Message       string    `json:"message"`
	OAuthConfigID string    `json:"oauth_config_id"`
	AuthorizeURL  string    `json:"authorize_url"`
	ExpiresAt     time.Time `json:"expires_at"`
	MCPClientID   string    `json:"mcp_client_id"`
}

func storeErr(err error, what, id string) error {
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound(what, id)
	case errors.Is(err, errNameTaken):
		return apierr.Conflict("name_taken", "an MCP client with this name already exists").WithParam("name")
	}
	return apierr.Internal(err)
}

// view builds the API form of cl.
func (s *Service) view(ctx context.Context, cl Client) (View, error) {
	v := View{Client: cl, Tools: []ToolView{}}
	v.Headers = redactMap(cl.Headers)
	if cl.StdioConfig != nil {
		sc := *cl.StdioConfig
		sc.Env = redactMap(sc.Env)
		v.StdioConfig = &sc
	}
	v.State, v.Error = s.state(&cl)
	for _, t := range s.getConn(cl.ID).toolList() {
		v.Tools = append(v.Tools, ToolView{Name: t.Name, Description: t.Description, Allowed: cl.allows(t.Name), InputSchema: t.InputSchema})
	}
	if cl.OAuthConfigID != "" {
		o, _, err := s.loadOAuth(ctx, cl.OAuthConfigID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return v, err
		}
		if err == nil {
			v.OAuthConfig = o.view()
		}
	}
	return v, nil
}

func (s *Service) list(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	clients, err := s.listClients(c.UserContext())
	if err != nil {
		return apierr.Internal(err)
	}
	// UUIDv7 ids: id order is creation order.
	sort.Slice(clients, func(i, j int) bool { return clients[i].ID < clients[j].ID })
	page := listing.Window(clients, limit, offset)
	out := make([]View, 0, len(page))
	for _, cl := range page {
		v, err := s.view(c.UserContext(), cl)
		if err != nil {
			return apierr.Internal(err)
		}
		out = append(out, v)
	}
	return c.JSON(fiber.Map{"clients": out, "count": len(out), "total_count": len(clients), "limit": limit, "offset": offset})
}

func (s *Service) get(c *fiber.Ctx) error {
	cl, err := s.getClient(c.UserContext(), c.Params("id"))
	if err != nil {
		return storeErr(err, "MCP client", c.Params("id"))
	}
	v, err := s.view(c.UserContext(), cl)
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(v)
}

func (s *Service) create(c *fiber.Ctx) error {
	var in Input
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	cl, ferr := in.normalize(s.o.AllowStdio)
	if ferr != nil {
		return ferr.api()
	}
	if cl.ConnectionType == ConnStdio {
		if e := requireStdioPerm(c); e != nil {
			return e
		}
	}
	now := s.now().UTC()
	cl.ID, cl.CreatedAt, cl.UpdatedAt = newID(), now, now
	ctx := c.UserContext()
	if cl.AuthType != AuthOAuth {
		if err := s.update(ctx, func(tx store.Tx) error { return putClient(tx, &cl, "") }); err != nil {
			return storeErr(err, "MCP client", cl.Name)
		}
		s.connect(ctx, cl.ID)
		v, err := s.view(ctx, cl)
		if err != nil {
			return apierr.Internal(err)
		}
		return c.Status(http.StatusCreated).JSON(v)
	}
	// Fail on a taken name before any discovery or registration happens
	// upstream.
	if err := s.st.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(nsNames, cl.Name); err == nil {
			return errNameTaken
		}
		return nil
	}); err != nil {
		return storeErr(err, "MCP client", cl.Name)
	}
	o, e := s.newOAuthConfig(ctx, &cl, in.OAuthConfig, func() (string, *apierr.Error) {
		return s.redirectURI(c.Protocol(), c.Hostname())
	})
	if e != nil {
		return e
	}
	cl.OAuthConfigID = o.ID
	o.Status, o.CreatedAt, o.UpdatedAt = OAuthPending, now, now
	var link string
	err := s.update(ctx, func(tx store.Tx) error {
		oc := *o
		var err error
		if link, err = s.startFlow(ctx, tx, &oc); err != nil {
			return err
		}
		*o = oc
		if err := putClient(tx, &cl, ""); err != nil {
			return err
		}
		return store.PutJSON(tx, nsOAuth, o.ID, o)
	})
	if err != nil {
		return storeErr(err, "MCP client", cl.Name)
	}
	s.setConn(cl.ID, &conn{state: StatePendingOAuth, err: authReason(o)})
	return c.Status(http.StatusCreated).JSON(FlowInitiation{
		Status: "pending_oauth", OAuthConfigID: o.ID, AuthorizeURL: link, ExpiresAt: o.FlowExpiresAt, MCPClientID: cl.ID,
		Message: "open authorize_url in a browser to authorize the MCP server, then call POST /api/mcp/client/" + cl.ID + "/complete-oauth",
	})
}

// updateInput is the PUT body: the creation fields plus the read-only
// fields of a GET answer, so a client can send back what it read.
type updateInput struct {
	Input
	ID          *string         `json:"id"`
	CreatedAt   json.RawMessage `json:"created_at"`
	UpdatedAt   json.RawMessage `json:"updated_at"`
	State       json.RawMessage `json:"state"`
	Error       json.RawMessage `json:"error"`
	Tools       json.RawMessage `json:"tools"`
	OAuthCfgID  json.RawMessage `json:"oauth_config_id"`
	ConfigHash  json.RawMessage `json:"config_hash"`
	OAuthConfig *oauthUpdate    `json:"oauth_config"`
}

// oauthUpdate is oauth_config in a PUT: client_id and client_secret rotate;
// the other fields may be sent back unchanged.
type oauthUpdate struct {
	OAuthInput
	ID                  json.RawMessage `json:"id"`
	Status              json.RawMessage `json:"status"`
	StatusReason        json.RawMessage `json:"status_reason"`
	Registered          json.RawMessage `json:"registered"`
	RedirectURI         json.RawMessage `json:"redirect_uri"`
	PendingAuthorizeURL json.RawMessage `json:"pending_authorize_url"`
}

func immutable(field string) *apierr.Error {
	return apierr.BadRequest("immutable_field", field, field+" cannot be changed after creation")
}

func (s *Service) put(c *fiber.Ctx) error {
	ref := c.Params("id")
	var in updateInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	ctx := c.UserContext()
	old, err := s.getClient(ctx, ref)
	if err != nil {
		return storeErr(err, "MCP client", ref)
	}
	if in.ID != nil && *in.ID != old.ID {
		return immutable("id")
	}
	if v := strings.ToLower(strings.TrimSpace(in.ConnectionType)); v != "" && v != old.ConnectionType {
		return immutable("connection_type")
	}
	if v := strings.ToLower(strings.TrimSpace(in.AuthType)); v != "" && v != old.AuthType {
		return immutable("auth_type")
	}
	if v := strings.TrimSpace(in.ConnectionString); v != "" && v != old.ConnectionString {
		return immutable("connection_string")
	}
	in.ConnectionType, in.AuthType, in.ConnectionString = old.ConnectionType, old.AuthType, old.ConnectionString
	if in.Name == "" {
		in.Name = old.Name
	}
	if in.Headers == nil {
		in.Headers = old.Headers
	} else {
		in.Headers = keepMasked(in.Headers, old.Headers)
	}
	if in.StdioConfig == nil {
		in.StdioConfig = old.StdioConfig
	} else if old.StdioConfig != nil {
		sc := *in.StdioConfig
		sc.Env = keepMasked(sc.Env, old.StdioConfig.Env)
		in.StdioConfig = &sc
	}
	if in.ToolsToExecute == nil {
		in.ToolsToExecute = old.ToolsToExecute
	}
	if in.IsEnabled == nil {
		in.IsEnabled = &old.IsEnabled
	}
	if in.OAuthConfig != nil {
		if old.AuthType != AuthOAuth {
			return apierr.BadRequest("invalid_field", "oauth_config", "oauth_config needs auth_type oauth")
		}
		in.Input.OAuthConfig = &in.OAuthConfig.OAuthInput
	} else if old.AuthType == AuthOAuth {
		in.Input.OAuthConfig = &OAuthInput{}
	}
	cl, ferr := in.Input.normalize(s.o.AllowStdio)
	if ferr != nil {
		return ferr.api()
	}
	if cl.ConnectionType == ConnStdio {
		if e := requireStdioPerm(c); e != nil {
			return e
		}
	}
	cl.ID, cl.CreatedAt, cl.UpdatedAt, cl.OAuthConfigID, cl.ConfigHash = old.ID, old.CreatedAt, s.now().UTC(), old.OAuthConfigID, old.ConfigHash
	var rotate *oauthRotation
	if in.OAuthConfig != nil {
		r, e := s.planRotation(ctx, c, old.OAuthConfigID, &in.OAuthConfig.OAuthInput, cl.Name)
		if e != nil {
			return e
		}
		rotate = r
	}
	err = s.update(ctx, func(tx store.Tx) error {
		cur, err := store.GetJSON[Client](tx, nsClients, old.ID)
		if err != nil {
			return err
		}
		if rotate != nil {
			if err := s.applyRotation(ctx, tx, old.OAuthConfigID, rotate); err != nil {
				return err
			}
		}
		return putClient(tx, &cl, cur.Name)
	})
	if err != nil {
		return storeErr(err, "MCP client", ref)
	}
	s.connect(ctx, cl.ID)
	v, err := s.view(ctx, cl)
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(v)
}

// oauthRotation is a planned change of OAuth client credentials.
type oauthRotation struct {
	clientID     string
	clientSecret *secret.Value
	// newClient is set when client_id changed (or registration re-ran):
	// tokens of the old client are dropped and a new flow starts.
	newClient   bool
	registered  bool
	redirectURI string
}

// planRotation validates an oauth_config sent in a PUT. Only client_id and
// client_secret change; an empty client_id with a known registration
// endpoint re-runs registration against the current public URL (the
// recovery for a changed redirect URI).
func (s *Service) planRotation(ctx context.Context, c *fiber.Ctx, configID string, in *OAuthInput, name string) (*oauthRotation, *apierr.Error) {
	o, _, err := s.loadOAuth(ctx, configID)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	for field, pair := range map[string][2]string{
		"authorize_url": {in.AuthorizeURL, o.AuthorizeURL}, "token_url": {in.TokenURL, o.TokenURL},
		"registration_url": {in.RegistrationURL, o.RegistrationURL}, "server_url": {in.ServerURL, o.ServerURL},
		"resource": {in.Resource, o.Resource},
	} {
		if pair[0] != "" && pair[0] != pair[1] {
			return nil, immutable("oauth_config." + field)
		}
	}
	if in.Scopes != nil && strings.Join(in.Scopes, " ") != strings.Join(o.Scopes, " ") {
		return nil, immutable("oauth_config.scopes")
	}
	r := &oauthRotation{clientID: o.ClientID, redirectURI: o.RedirectURI, registered: o.Registered}
	if in.ClientSecret != nil {
		v := secret.KeepIfMasked(*in.ClientSecret, o.ClientSecret)
		r.clientSecret = &v
	}
	if in.ClientID == nil {
		return r, nil
	}
	id := strings.TrimSpace(*in.ClientID)
	switch {
	case id == o.ClientID:
	case id != "":
		r.clientID, r.newClient, r.registered = id, true, false
	case o.RegistrationURL == "":
		return nil, apierr.BadRequest("invalid_field", "oauth_config.client_id", "client_id cannot be cleared: no registration_url to register a new client")
	default:
		redirect, e := s.redirectURI(c.Protocol(), c.Hostname())
		if e != nil {
			return nil, e
		}
		tmp := o
		tmp.RedirectURI = redirect
		if e := s.register(ctx, &tmp, name); e != nil {
			return nil, e
		}
		empty := secret.Value{}
		r.clientID, r.newClient, r.registered, r.redirectURI, r.clientSecret = tmp.ClientID, true, true, redirect, &empty
		if !tmp.ClientSecret.IsZero() {
			r.clientSecret = &tmp.ClientSecret
		}
	}
	return r, nil
}

func (s *Service) applyRotation(ctx context.Context, tx store.Tx, configID string, r *oauthRotation) error {
	o, err := store.GetJSON[oauthConfig](tx, nsOAuth, configID)
	if err != nil {
		return err
	}
	o.ClientID, o.Registered, o.RedirectURI, o.UpdatedAt = r.clientID, r.registered, r.redirectURI, s.now().UTC()
	if r.clientSecret != nil {
		o.ClientSecret = *r.clientSecret
	}
	if r.newClient {
		// The old client's grant cannot be refreshed by the new client.
		if err := tx.Delete(nsTokens, configID); err != nil {
			return err
		}
		o.Status, o.StatusReason = OAuthPending, "client credentials changed; authorize again"
		if _, err := s.startFlow(ctx, tx, &o); err != nil {
			return err
		}
	}
	return store.PutJSON(tx, nsOAuth, configID, o)
}

func (s *Service) delete(c *fiber.Ctx) error {
	ref := c.Params("id")
	var cl Client
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if cl, err = getClient(tx, ref); err != nil {
			return err
		}
		return deleteClientData(tx, &cl)
	})
	if err != nil {
		return storeErr(err, "MCP client", ref)
	}
	s.dropConn(cl.ID)
	return c.JSON(fiber.Map{"status": "success", "message": fmt.Sprintf("MCP client %s deleted", cl.Name)})
}

func (s *Service) reconnect(c *fiber.Ctx) error {
	ref := c.Params("id")
	cl, err := s.getClient(c.UserContext(), ref)
	if err != nil {
		return storeErr(err, "MCP client", ref)
	}
	s.connect(c.UserContext(), cl.ID)
	v, err := s.view(c.UserContext(), cl)
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(v)
}

func (s *Service) completeOAuth(c *fiber.Ctx) error {
	ref := c.Params("id")
	ctx := c.UserContext()
	cl, err := s.getClient(ctx, ref)
	if err != nil {
		return storeErr(err, "MCP client", ref)
	}
	if cl.AuthType != AuthOAuth {
		return apierr.BadRequest("not_oauth", "auth_type", "MCP client "+cl.Name+" does not use OAuth")
	}
	o, _, err := s.loadOAuth(ctx, cl.OAuthConfigID)
	if err != nil {
		return storeErr(err, "OAuth config", cl.OAuthConfigID)
	}
	if o.Status != OAuthAuthorized {
		return apierr.Conflict("oauth_not_authorized",
			fmt.Sprintf("OAuth config %s is %s: %s", o.ID, o.Status, authReason(&o)))
	}
	cn := s.connect(ctx, cl.ID)
	if cn == nil || cn.state != StateConnected {
		msg := "not connected"
		if cn != nil {
			msg = cn.state + ": " + cn.err
		}
		return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "mcp_connect_failed",
			fmt.Sprintf("MCP client %s did not connect: %s", cl.Name, msg))
	}
	return c.JSON(fiber.Map{"status": "success", "message": fmt.Sprintf("MCP client %s connected with %d tools", cl.Name, len(cn.toolList()))})
}

func (s *Service) oauthStatus(c *fiber.Ctx) error {
	o, t, err := s.loadOAuth(c.UserContext(), c.Params("id"))
	if err != nil {
		return storeErr(err, "OAuth config", c.Params("id"))
	}
	return c.JSON(statusOf(&o, t))
}

// revoke deletes the stored token and keeps the row as revoked. The
// provider's revocation endpoint is not called (spec).
func (s *Service) revoke(c *fiber.Ctx) error {
	id := c.Params("id")
	var o oauthConfig
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if o, err = store.GetJSON[oauthConfig](tx, nsOAuth, id); err != nil {
			return err
		}
		if err := tx.Delete(nsTokens, id); err != nil {
			return err
		}
		if o.FlowKey != "" {
			if err := tx.Delete(nsFlows, o.FlowKey); err != nil {
				return err
			}
		}
		o.Status, o.StatusReason, o.UpdatedAt = OAuthRevoked, "", s.now().UTC()
		o.FlowURL, o.FlowKey, o.FlowExpiresAt = "", "", time.Time{}
		return store.PutJSON(tx, nsOAuth, id, o)
	})
	if err != nil {
		return storeErr(err, "OAuth config", id)
	}
	// Close the live session too; a refresh racing with this sees the
	// revoked status and does not store its token (see refresh).
	s.setConn(o.MCPClientID, &conn{state: StatePendingOAuth, err: authReason(&o)})
	return c.JSON(fiber.Map{"status": "success", "message": "OAuth token revoked; the configuration is kept"})
}

// callback is the provider's redirect target. The state must name a live
// flow; it is consumed whatever happens next, so it cannot be replayed.
func (s *Service) callback(c *fiber.Ctx) error {
	state := c.Query("state")
	if state == "" {
		return apierr.BadRequest("invalid_state", "state", "the state parameter is missing")
	}
	ctx := c.UserContext()
	var fl flow
	var o oauthConfig
	err := s.update(ctx, func(tx store.Tx) error {
		var err error
		key := stateKey(state)
		if fl, err = store.GetJSON[flow](tx, nsFlows, key); err != nil {
			return err
		}
		if err := tx.Delete(nsFlows, key); err != nil {
			return err
		}
		if o, err = store.GetJSON[oauthConfig](tx, nsOAuth, fl.ConfigID); err != nil {
			return err
		}
		o.FlowURL, o.FlowKey = "", ""
		return store.PutJSON(tx, nsOAuth, o.ID, o)
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.BadRequest("invalid_state", "state", "unknown, replaced or already used OAuth state")
	}
	if err != nil {
		return apierr.Internal(err)
	}
	fail := func(status int, code, reason string) error {
		if ferr := s.failOAuth(ctx, o.ID, reason); ferr != nil {
			var are *authRequiredError
			if !errors.As(ferr, &are) {
				return apierr.Internal(ferr)
			}
		}
		return apierr.New(status, apierr.TypeInvalidRequest, code, "OAuth authorization failed: "+reason)
	}
	if !s.now().Before(fl.ExpiresAt) {
		return fail(http.StatusBadRequest, "state_expired", "the authorization flow expired; start a new one")
	}
	if e := c.Query("error"); e != "" {
		reason := "the authorization server answered " + e
		if d := c.Query("error_description"); d != "" {
			reason += ": " + d
		}
		return fail(http.StatusBadRequest, "oauth_authorization_failed", reason)
	}
	code := c.Query("code")
	if code == "" {
		return fail(http.StatusBadRequest, "oauth_authorization_failed", "the callback carries no code")
	}
	t, err := s.exchange(ctx, &o, code, fl.Verifier)
	if err != nil {
		return fail(http.StatusBadGateway, "oauth_token_exchange_failed", "token exchange failed: "+err.Error())
	}
	err = s.update(ctx, func(tx store.Tx) error {
		cur, err := store.GetJSON[oauthConfig](tx, nsOAuth, o.ID)
		if err != nil {
			return err
		}
		cur.Status, cur.StatusReason, cur.UpdatedAt = OAuthAuthorized, "", s.now().UTC()
		if err := store.PutJSON(tx, nsTokens, o.ID, t); err != nil {
			return err
		}
		return store.PutJSON(tx, nsOAuth, o.ID, cur)
	})
	if err != nil {
		return storeErr(err, "OAuth config", o.ID)
	}
	s.log.Info("mcp: OAuth authorized", "oauth_config_id", o.ID, "mcp_client_id", o.MCPClientID)
	return c.JSON(fiber.Map{"status": OAuthAuthorized, "oauth_config_id": o.ID, "mcp_client_id": o.MCPClientID,
		"message": "authorization complete; you can close this window"})
}
