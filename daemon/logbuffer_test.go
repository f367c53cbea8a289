package daemon

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is the file under the log: written by the flusher, read by
// the test.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.writes
}

func TestLogBuffer(t *testing.T) {
	t.Run("a line reaches the file within the interval, batched", func(t *testing.T) {
		var file lockedBuffer
		b := NewLogBuffer(&file, 20*time.Millisecond)
		defer b.Close()
		for i := range 100 {
			fmt.Fprintf(b, "line %d\n", i)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, writes := file.String()
			if strings.Count(got, "\n") == 100 {
				if writes >= 100 {
					t.Errorf("100 lines took %d writes to the file, want them batched", writes)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 5 s the file holds %q, want 100 lines", got)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("Close writes out the rest", func(t *testing.T) {
		var file lockedBuffer
		b := NewLogBuffer(&file, time.Hour)
		fmt.Fprintf(b, "last words\n")
		if got, _ := file.String(); got != "" {
			t.Fatalf("before the interval the file holds %q", got)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := file.String(); got != "last words\n" {
			t.Fatalf("after Close the file holds %q", got)
		}
	})
	t.Run("concurrent lines stay whole, also past the buffer", func(t *testing.T) {
		var file lockedBuffer
		b := NewLogBuffer(&file, time.Millisecond)
		line := strings.Repeat("x", 1000)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 200 { // 8 × 200 KB: many times the buffer
					fmt.Fprintf(b, "%d %d %s\n", w, i, line)
				}
			})
		}
		wg.Wait()
		b.Close()
		got, _ := file.String()
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 1600 {
			t.Fatalf("%d lines, want 1600", len(lines))
		}
		for _, l := range lines {
			var w, i int
			var rest string
			if n, _ := fmt.Sscanf(l, "%d %d %s", &w, &i, &rest); n != 3 || rest != line {
				t.Fatalf("a line came out broken or mixed: %.80q", l)
			}
		}
	})
}
