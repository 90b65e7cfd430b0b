//go:build !wasm

package jsonx

func skipString(b []byte, i int) int { return skipStringIndex(b, i) }
