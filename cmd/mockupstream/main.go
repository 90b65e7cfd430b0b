// Command mockupstream serves the fake upstream providers of
// host/fakeupstream on a loopback port with no artificial delay, for the load
// benchmark and manual testing. Families are mounted under /<family>
// (/openai, /anthropic, /gemini, /bedrock, /cohere); OpenAI is also served at
// the root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/upstreamauth"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "mockupstream:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. ready, when non-nil, receives the bound address.
func run(ctx context.Context, args []string, stdout io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("mockupstream", flag.ContinueOnError)
	port := fs.Int("port", 8091, "TCP port on 127.0.0.1 (0 picks a free one)")
	apiKey := fs.String("api-key", "", "only accept this key (default: any non-empty key)")
	awsKey := fs.String("aws-access-key-id", "", "verify Bedrock SigV4 signatures with this access key (needs -aws-secret-access-key)")
	awsSecret := fs.String("aws-secret-access-key", "", "secret for -aws-access-key-id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := fakeupstream.Options{APIKey: *apiKey}
	if *awsKey != "" {
		opts.AWS = &upstreamauth.AWSCredentials{AccessKeyID: *awsKey, SecretAccessKey: *awsSecret}
	}
	set := fakeupstream.NewSet(opts)
	defer set.Close()

	// Loopback only: the fakes accept any key and must never face a network.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: set, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "mockupstream listening on http://%s\n", ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	set.Close() // release hanging handlers before the graceful shutdown waits on them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
