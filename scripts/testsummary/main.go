// Command testsummary turns `go test -json` into what a person running
// scripts/test.sh wants to watch: a line as each package starts, a line
// every half minute naming the packages still running and for how long,
// the output of failed tests in full, and go test's own closing lines
// (`ok  pkg  12.3s`, `FAIL pkg`) unchanged, so that whatever reads them
// still can. With -all it prints every test's output, as go test -v does.
//
//	go test -json ./... | testsummary [-all]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is one line of test2json's output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	all := flag.Bool("all", false, "print every test's output, not only failed tests'")
	every := flag.Duration("every", 30*time.Second, "how often to name the packages still running")
	flag.Parse()
	s := newSummary(os.Stdout, *all)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.stillRunning()
			case <-stop:
				return
			}
		}
	}()
	s.read(os.Stdin)
	close(stop)
}

type summary struct {
	mu      sync.Mutex
	w       io.Writer
	all     bool
	running map[string]time.Time
	started int
	held    map[string][]string // a test's output, until it passes or fails
}

func newSummary(w io.Writer, all bool) *summary {
	return &summary{w: w, all: all, running: map[string]time.Time{}, held: map[string][]string{}}
}

func (s *summary) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not test2json's: a build error or go's own message. Pass it on.
			s.print(sc.Text() + "\n")
			continue
		}
		s.handle(e)
	}
}

func (s *summary) handle(e event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "start":
		s.running[e.Package] = time.Now()
		s.started++
		fmt.Fprintf(s.w, "=== package %d: %s\n", s.started, e.Package)
	case e.Action == "build-output":
		fmt.Fprint(s.w, e.Output)
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		delete(s.running, e.Package)
	case e.Test == "" && e.Action == "output":
		if strings.TrimSpace(e.Output) != "PASS" {
			fmt.Fprint(s.w, e.Output)
		}
	case e.Action == "output":
		if s.all {
			fmt.Fprint(s.w, e.Output)
		} else {
			s.held[key] = append(s.held[key], e.Output)
		}
	case e.Action == "fail":
		if !s.all {
			fmt.Fprint(s.w, strings.Join(s.held[key], ""))
		}
		delete(s.held, key)
	case e.Action == "pass" || e.Action == "skip":
		delete(s.held, key)
	}
}

func (s *summary) print(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprint(s.w, line)
}

// stillRunning names the packages that have not ended, longest first.
func (s *summary) stillRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.running) == 0 {
		return
	}
	names := make([]string, 0, len(s.running))
	for p := range s.running {
		names = append(names, p)
	}
	sort.Slice(names, func(i, j int) bool { return s.running[names[i]].Before(s.running[names[j]]) })
	parts := make([]string, len(names))
	for i, p := range names {
		parts[i] = fmt.Sprintf("%s (%d s)", p, int(time.Since(s.running[p]).Seconds()))
	}
	fmt.Fprintf(s.w, "    ... still running: %s\n", strings.Join(parts, ", "))
}
