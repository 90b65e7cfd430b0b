package grpcplugin

import (
	"errors"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestResultRoundTrip(t *testing.T) {
	in := pluginsdk.Output{Status: pluginsdk.StatusOK, Body: []byte("b"), State: []byte{}, Headers: map[string]string{"x-a": "1"}}
	out, err := DecodeResult(EncodeResult(nil, in, nil))
	if err != nil || string(out.Body) != "b" || out.Response != nil || out.State == nil || len(out.State) != 0 || out.Headers["x-a"] != "1" {
		t.Fatalf("%+v %v", out, err)
	}
	_, err = DecodeResult(EncodeResult(nil, pluginsdk.Output{}, pluginsdk.Reject(403, "no")))
	var pe *pluginsdk.Error
	if !errors.As(err, &pe) || pe.Code != 403 || pe.Message != "no" {
		t.Fatalf("error round trip: %v", err)
	}
	_, err = DecodeResult(EncodeResult(nil, pluginsdk.Output{}, errors.New("bug")))
	if !errors.As(err, &pe) || pe.Code != 500 {
		t.Fatalf("plain error: %v", err)
	}
	if _, err := DecodeResult([]byte{1, 2, 3}); err == nil {
		t.Fatal("garbage accepted")
	}
}
