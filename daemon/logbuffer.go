package daemon

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// LogBuffer batches a busy server's log lines: one write(2) per flush
// instead of one per request, which under load was the access log's whole
// cost (a syscall, and every request queueing on the log's lock while one
// of them is in it). A line reaches the file within the flush interval,
// at once when the buffer fills, and on Close; a SIGKILL loses at most
// that interval's lines. Each Write is kept whole: lines never interleave.
type LogBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	err  error // the first write error, kept so that it is not lost between flushes
	stop chan struct{}
	done chan struct{}
}

// LogBufferSize is the buffer of a LogBuffer: about 250 access-log lines.
const LogBufferSize = 64 << 10

// NewLogBuffer writes to w what it is given, flushed every interval.
func NewLogBuffer(w io.Writer, interval time.Duration) *LogBuffer {
	b := &LogBuffer{w: bufio.NewWriterSize(w, LogBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.Flush()
			case <-b.stop:
				return
			}
		}
	}()
	return b
}

// Write buffers p whole.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.w.Write(p)
	if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

// Flush writes out what is buffered.
func (b *LogBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.w.Flush(); err != nil && b.err == nil {
		b.err = err
	}
	return b.err
}

// Close stops the flushing and writes out the rest. The buffer must not be
// written to after it.
func (b *LogBuffer) Close() error {
	close(b.stop)
	<-b.done
	return b.Flush()
}
