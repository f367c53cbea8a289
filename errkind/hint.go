package errkind

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Hint is what the operator should do about a failure or a finding, as
// data a shell words: Fix is a sentence with one %s for each of Refs, the
// inputs (Field) and operations (Action) it names. The library never spells
// a CLI flag or command, nor an HTTP route: the CLI words a Field as its
// flag and an Action as its command line, the server as JSON members and
// routes.
type Hint struct {
	Fix  string
	Refs []Ref
}

// Ref is what a hint names: a Field or an Action.
type Ref interface{ isRef() }

// Field is an input by the library's name for it (bytes_soft,
// take_over_host), which is the API's JSON member.
type Field string

// Action is an operation the operator can run: what (Op), on what (Target:
// a project, a tree's owner; "" for none) and the inputs it sets (Args, in
// the order a shell should give them).
type Action struct {
	Op     Op
	Target string
	Args   []Arg
}

// Arg is an input an Action sets, by the library's name for it; Value ""
// is a switch turned on (purge, fix, dry_run).
type Arg struct {
	Field, Value string
}

func (Field) isRef()  {}
func (Action) isRef() {}

// Op is an operation a hint may ask for, named as no shell names it. Every
// shell words each one (its tests hold it): the CLI as its command, the
// server as its route or, for an operation run on the host only, a
// sentence.
type Op string

// The operations hints ask for.
const (
	OpInit          Op = "init"           // prepare a root, choose its backend, take a host name over
	OpDoctor        Op = "doctor"         // examine a root (Arg fix: and repair it)
	OpProjectList   Op = "project.list"   // the projects
	OpProjectShow   Op = "project.show"   // one project (Target)
	OpProjectAdd    Op = "project.add"    // register a project (Target)
	OpProjectRemove Op = "project.remove" // unregister a project (Target; Args purge, force)
	OpFilesRemove   Op = "files.remove"   // delete a path in a tree (Arg recursive)
	OpLeaseList     Op = "lease.list"     // a project's leases
	OpLeaseRelease  Op = "lease.release"  // end a run's lease
	OpHostList      Op = "host.list"      // the fleet's hosts
	OpEvents        Op = "events"         // the journal (Arg type)
	OpSweep         Op = "sweep"          // sweep a project or every one (Args all, area, dry_run, plan_out)
	OpTop           Op = "top"            // what fills a tree (Target; Arg area)
	OpReport        Op = "report"         // every tree's usage against its limits
)

// Ops is every Op, for the shells' tests that each is worded.
var Ops = []Op{OpInit, OpDoctor, OpProjectList, OpProjectShow, OpProjectAdd, OpProjectRemove, OpFilesRemove,
	OpLeaseList, OpLeaseRelease, OpHostList, OpEvents, OpSweep, OpTop, OpReport}

// Do is an Action of op on target setting args, given as field, value
// pairs ("" for a switch).
func Do(op Op, target string, args ...string) Action {
	a := Action{Op: op, Target: target}
	for i := 0; i+1 < len(args); i += 2 {
		a.Args = append(a.Args, Arg{args[i], args[i+1]})
	}
	return a
}

// Fix is a Hint naming refs; a plain sentence names none.
func Fix(fix string, refs ...Ref) Hint { return Hint{Fix: fix, Refs: refs} }

// Words is a shell's vocabulary for what hints name.
type Words struct {
	Field  func(field string) string
	Action func(Action) string
}

// Neutral words a hint as the library names things: fields as the API's
// JSON members, actions as op, target and args (doctor (fix)). A shell
// with a better word for an action uses its own Words.
var Neutral = Words{
	Field:  func(f string) string { return f },
	Action: func(a Action) string { return a.String() },
}

// String is the action in no shell's words: "project.remove omni (purge)".
func (a Action) String() string {
	s := string(a.Op)
	if a.Target != "" {
		s += " " + a.Target
	}
	if len(a.Args) == 0 {
		return s
	}
	args := make([]string, len(a.Args))
	for i, g := range a.Args {
		args[i] = g.Field
		if g.Value != "" {
			args[i] += "=" + g.Value
		}
	}
	return s + " (" + strings.Join(args, ", ") + ")"
}

// Arg is the value of the action's input field and whether it sets it.
func (a Action) Arg(field string) (string, bool) {
	for _, g := range a.Args {
		if g.Field == field {
			return g.Value, true
		}
	}
	return "", false
}

// In is the hint in w's words.
func (h Hint) In(w Words) string {
	if len(h.Refs) == 0 {
		return h.Fix
	}
	words := make([]any, len(h.Refs))
	for i, r := range h.Refs {
		switch r := r.(type) {
		case Field:
			words[i] = w.Field(string(r))
		case Action:
			words[i] = w.Action(r)
		}
	}
	return fmt.Sprintf(h.Fix, words...)
}

// String is the hint in Neutral words.
func (h Hint) String() string { return h.In(Neutral) }

// IsZero says there is nothing to do.
func (h Hint) IsZero() bool { return h.Fix == "" }

// MarshalJSON: a hint in a result (a finding's fix) is a string, in Neutral
// words; a shell that words it its own way renders it before encoding.
func (h Hint) MarshalJSON() ([]byte, error) { return json.Marshal(h.String()) }

// Then is h followed by more: "h; more".
func (h Hint) Then(more Hint) Hint {
	if h.IsZero() {
		return more
	}
	return Hint{Fix: h.Fix + "; " + more.Fix, Refs: append(append([]Ref(nil), h.Refs...), more.Refs...)}
}
