// Package grpcplugin serves a pluginsdk.Plugin as a go-plugin subprocess
// over gRPC, and holds the wire definitions the host's process runtime uses
// to talk to it. A plugin author calls Serve from main; the plugin code is
// the same as for a wasm module.
//
// No protoc is involved: the service is one unary method whose messages
// are wrapperspb.BytesValue, carrying the same payloads the wasm ABI uses.
// Plugin errors travel as codes inside the payload because Go error types
// do not survive a gRPC trip.
package grpcplugin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Handshake is shared by host and plugin. ProtocolVersion follows the
// pluginsdk ABI major, so a v2 host refuses a v1 subprocess at start.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  pluginsdk.ABIVersion,
	MagicCookieKey:   "WASMGATE_PLUGIN",
	MagicCookieValue: "7b0c1c3e-wasmgate-plugin-abi",
}

// PluginName is the name the plugin is dispensed under.
const PluginName = "wasmgate"

const (
	serviceName = "wasmgate.plugin.v1.Plugin"
	callMethod  = "/" + serviceName + "/Call"
)

// ServeOptions tunes Serve.
type ServeOptions struct {
	// Concurrent lets calls run in parallel. Off by default: a wasm
	// instance runs one call at a time, and plugin code written for it
	// (reusable buffers, state in the struct) may not be goroutine-safe.
	Concurrent bool
}

// Serve runs impl as a plugin subprocess until the host disconnects. It
// must be called from main and never returns normally.
func Serve(impl pluginsdk.Plugin) { ServeWith(impl, ServeOptions{}) }

// ServeWith is Serve with options.
func ServeWith(impl pluginsdk.Plugin, opts ServeOptions) {
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "This is a wasmgate plugin; the gateway starts it (runtime \"process\").")
		os.Exit(1)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl, Concurrent: opts.Concurrent}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

// GRPCPlugin is the go-plugin glue. The host uses it with Impl nil.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl       pluginsdk.Plugin
	Concurrent bool
}

// GRPCServer registers the plugin service (plugin side).
func (g *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, &server{impl: g.Impl, concurrent: g.Concurrent})
	return nil
}

// GRPCClient returns a *Client (host side).
func (g *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Client{conn: c}, nil
}

type caller interface {
	call(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*caller)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			s := srv.(caller)
			if interceptor == nil {
				return s.call(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: callMethod}
			return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return s.call(ctx, req.(*wrapperspb.BytesValue))
			})
		},
	}},
	Metadata: "wasmgate/plugin/v1",
}

type server struct {
	impl       pluginsdk.Plugin
	concurrent bool
	mu         sync.Mutex
}

func (s *server) call(_ context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	if len(in.Value) < 4 {
		return nil, errors.New("grpcplugin: short request")
	}
	hook := pluginsdk.Hook(binary.LittleEndian.Uint32(in.Value))
	payload := in.Value[4:]
	if !s.concurrent {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	var out pluginsdk.Output
	var err error
	if hook == pluginsdk.HookDescribe {
		var b []byte
		b, err = pluginsdk.EncodeManifest(s.impl)
		out = pluginsdk.Replace(b)
	} else {
		out, err = pluginsdk.Dispatch(s.impl, hook, payload)
	}
	return &wrapperspb.BytesValue{Value: EncodeResult(nil, out, err)}, nil
}

// Client is the host side of one plugin subprocess connection. It is safe
// for concurrent use.
type Client struct {
	conn *grpc.ClientConn
}

// Call runs one hook. payload is the hook's input as in the wasm ABI
// (stream hooks take a stream frame). A plugin's error status comes back
// as a *pluginsdk.Error; any other error is a transport failure.
func (c *Client) Call(ctx context.Context, hook pluginsdk.Hook, payload []byte) (pluginsdk.Output, error) {
	req := make([]byte, 4, 4+len(payload))
	binary.LittleEndian.PutUint32(req, uint32(hook))
	req = append(req, payload...)
	out := new(wrapperspb.BytesValue)
	if err := c.conn.Invoke(ctx, callMethod, &wrapperspb.BytesValue{Value: req}, out); err != nil {
		return pluginsdk.Output{}, fmt.Errorf("grpcplugin: call %s: %w", hook, err)
	}
	return DecodeResult(out.Value)
}

// Result layout (little endian): u32 status, u32 error code, then five
// u32-length-prefixed sections: body, response, state, headers JSON,
// error message. Length 0xFFFFFFFF marks an absent section, so absent and
// empty stay distinct as in the wasm ABI.
const absent = 0xFFFFFFFF

// EncodeResult appends the encoded result of a hook to dst.
func EncodeResult(dst []byte, out pluginsdk.Output, err error) []byte {
	status, code, msg := out.Status, uint32(0), ""
	if err != nil {
		pe := pluginsdk.AsError(err)
		status, code, msg = pluginsdk.StatusError, uint32(pe.Code), pe.Message
		out = pluginsdk.Output{}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(status))
	dst = binary.LittleEndian.AppendUint32(dst, code)
	var hdr []byte
	if len(out.Headers) > 0 {
		hdr = pluginsdk.AppendHeaders(nil, out.Headers)
	}
	var m []byte
	if err != nil {
		m = []byte(msg)
	}
	for _, sec := range [][]byte{out.Body, out.Response, out.State, hdr, m} {
		if sec == nil {
			dst = binary.LittleEndian.AppendUint32(dst, absent)
			continue
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(sec)))
		dst = append(dst, sec...)
	}
	return dst
}

// DecodeResult is the inverse of EncodeResult.
func DecodeResult(b []byte) (pluginsdk.Output, error) {
	bad := errors.New("grpcplugin: malformed result")
	if len(b) < 8 {
		return pluginsdk.Output{}, bad
	}
	out := pluginsdk.Output{Status: pluginsdk.Status(binary.LittleEndian.Uint32(b))}
	code := binary.LittleEndian.Uint32(b[4:])
	b = b[8:]
	var secs [5][]byte
	for i := range secs {
		if len(b) < 4 {
			return pluginsdk.Output{}, bad
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if n == absent {
			continue
		}
		if uint64(n) > uint64(len(b)) {
			return pluginsdk.Output{}, bad
		}
		secs[i], b = b[:n:n], b[n:]
	}
	out.Body, out.Response, out.State = secs[0], secs[1], secs[2]
	if secs[3] != nil {
		if err := json.Unmarshal(secs[3], &out.Headers); err != nil {
			return pluginsdk.Output{}, fmt.Errorf("grpcplugin: headers: %w", err)
		}
	}
	if out.Status == pluginsdk.StatusError {
		return pluginsdk.Output{Status: out.Status}, &pluginsdk.Error{Code: int(code), Message: string(secs[4])}
	}
	return out, nil
}
