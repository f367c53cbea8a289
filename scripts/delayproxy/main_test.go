package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// Bytes pass through intact and in order, both ways, and each round trip
// through the proxy pays its delay twice.
func TestProxyDelaysEachWay(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const delay = 5 * time.Millisecond
	late := &lateness{}
	go proxy(ln, echo.Addr().String(), delay, late)
	defer ln.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for i := range 5 {
		msg := bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1))
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 2*delay {
			t.Errorf("round trip %d took %s, under twice the delay of %s", i, took, delay)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("round trip %d: the bytes came back changed", i)
		}
	}
	if late.summary(delay) == "delayproxy: passed nothing" {
		t.Error("the proxy kept no lateness")
	}
}
