package main

// The CLI's text output: how each result reads for a person. Every name a
// tenant controls passes through safe (or line) here, so that none reaches
// the terminal raw (docs/design/README.md#output-conventions); JSON escapes on its own and is untouched.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/safetext"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/units"
)

// safe escapes a tenant-controlled name; line a message quoting one.
func safe(s string) string { return safetext.Name(s) }
func line(s string) string { return safetext.Line(s) }

// timeLayout is how every text output prints a time: local, with its zone.
const timeLayout = "2006-01-02 15:04:05 MST"

func when(t time.Time) string { return t.Local().Format(timeLayout) }

// plural is "1 entry", "2 entries".
func plural[N int | uint64 | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// progressLine is the one line a long walk keeps rewriting on stderr. It is
// cleared before anything else is printed (see env.print), so that output
// never lands beside a half-written count.
type progressLine struct {
	w     io.Writer
	mu    sync.Mutex
	shown bool
}

func (p *progressLine) show(text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+text)
	p.shown = true
}

func (p *progressLine) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// watched reports whether a person watches: stdout and stderr on a
// terminal, no --json. Only then is there a progress line.
func (e env) watched() bool { return !e.json() && isTerminal(os.Stdout) && isTerminal(os.Stderr) }

// walkProgress is the progress line's text for a walk of one tree.
func walkProgress(p project.TreeProgress) string {
	rate := float64(p.Files) / max(p.Elapsed.Seconds(), 0.001)
	s := fmt.Sprintf("  %s %s: %s, %s, %.0f files/s", safe(p.Project), p.Area, plural(p.Files, "file", "files"), units.FormatIEC(p.Bytes), rate)
	if pct := p.Percent(); pct >= 0 {
		s += fmt.Sprintf(", %.0f%% of the kernel's %d inodes", pct, p.KernelInodes)
	}
	return s
}

// useColour: on a terminal only, never with NO_COLOR (no-color.org: any
// value but empty) or a dumb terminal.
func useColour(f *os.File) bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(f)
}

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

// filesTable lists a directory, sorted by name as ls does.
func filesTable(w io.Writer, entries []files.Entry) {
	sorted := append([]files.Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	rows := make([][]string, len(sorted))
	for i, en := range sorted {
		mod := "-"
		if !en.ModTime.IsZero() {
			mod = when(en.ModTime)
		}
		rows[i] = []string{en.Type, units.FormatIEC(uint64(max(en.Size, 0))), mod, safe(en.Name)}
	}
	table(w, "TYPE\tSIZE\tMODIFIED\tNAME", rows)
}

// topEntry is one row under a directory: a subdirectory, or one of the
// largest files, shown beside the directories it sits among.
type topEntry struct {
	node *inventory.Node
	file *inventory.File
}

func (t topEntry) size() uint64 {
	if t.node != nil {
		return t.node.SizeBytes
	}
	return t.file.SizeBytes
}

// entriesOf is what a directory of the walk shows: its kept subdirectories
// and the top files directly in it, sorted by sortBy, at most limit.
func entriesOf(n *inventory.Node, filesIn map[string][]inventory.File, sortBy string, limit int) []topEntry {
	var out []topEntry
	for _, c := range n.Children {
		out = append(out, topEntry{node: c})
	}
	for i := range filesIn[n.Path] {
		out = append(out, topEntry{file: &filesIn[n.Path][i]})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch sortBy {
		case "files":
			fa, fb := uint64(1), uint64(1)
			if a.node != nil {
				fa = a.node.Files
			}
			if b.node != nil {
				fb = b.node.Files
			}
			if fa != fb {
				return fa > fb
			}
		case "mtime":
			// A file of the top list has no mtime of its own: after the directories.
			if (a.node == nil) != (b.node == nil) {
				return a.node != nil
			}
			if a.node != nil && !a.node.Mtime.Equal(b.node.Mtime) {
				return a.node.Mtime.After(b.node.Mtime)
			}
		}
		return a.size() > b.size()
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// filesByDir groups a walk's largest files by the directory holding them.
func filesByDir(top []inventory.File) map[string][]inventory.File {
	out := map[string][]inventory.File{}
	for _, f := range top {
		d := path.Dir(f.Path)
		out[d] = append(out[d], f)
	}
	return out
}

// topTable prints what fills a tree: each directory with its share, file
// count, newest mtime, allocated and apparent size, and the largest files
// beside the directories they sit among.
func topTable(w io.Writer, res files.TopResult, sortBy string, limit int) {
	where := safe(res.Project) + " " + res.Area
	if res.Path != "." {
		where += " " + safe(res.Path)
	}
	fmt.Fprintf(w, "%s, walked %s\n", where, when(res.WalkedAt))
	total := max(res.Root.SizeBytes, 1)
	byDir := filesByDir(res.TopFiles)
	var rows [][]string
	share := func(n uint64) string { return fmt.Sprintf("%.1f%%", float64(n)*100/float64(total)) }
	var walk func(n *inventory.Node, indent string)
	walk = func(n *inventory.Node, indent string) {
		rows = append(rows, []string{"dir", units.FormatIEC(n.SizeBytes), units.FormatIEC(n.ApparentBytes), share(n.SizeBytes),
			fmt.Sprint(n.Files), when(n.Mtime), indent + safe(n.Path)})
		for _, e := range entriesOf(n, byDir, sortBy, limit) {
			if e.node != nil {
				walk(e.node, indent+"  ")
				continue
			}
			rows = append(rows, []string{"file", units.FormatIEC(e.file.SizeBytes), "-", share(e.file.SizeBytes), "1", "-",
				indent + "  " + safe(e.file.Path)})
		}
	}
	walk(res.Root, "")
	table(w, "TYPE\tSIZE\tAPPARENT\tSHARE\tFILES\tNEWEST\tPATH", rows)
	if len(res.TopFiles) > 0 {
		fmt.Fprintln(w, "\nlargest files:")
		for _, f := range res.TopFiles[:min(10, len(res.TopFiles))] {
			fmt.Fprintf(w, "  %10s  %s\n", units.FormatIEC(f.SizeBytes), safe(f.Path))
		}
	}
	if res.Partial {
		fmt.Fprintln(w, "(partial: the walk ran out of time)")
	}
	if res.UnreadableEntries > 0 {
		fmt.Fprintf(w, "(%s unreadable)\n", plural(res.UnreadableEntries, "entry", "entries"))
	}
}

// snapshotText prints one walk per tree with its largest entries, files
// at the top level among them.
func snapshotText(w io.Writer, snaps []project.TreeSnapshot) {
	for _, s := range snaps {
		if s.Error != "" {
			fmt.Fprintf(w, "%s %s: FAILED: %s\n", safe(s.Project), s.Area, line(s.Error))
			continue
		}
		note := ""
		if s.Partial {
			note = " (partial: the budget ran out)"
		}
		if s.Errors > 0 {
			note += fmt.Sprintf(" (%s unreadable)", plural(s.Errors, "entry", "entries"))
		}
		fmt.Fprintf(w, "%s %s: %s in %s, %s%s\n", safe(s.Project), s.Area, units.FormatIEC(s.SizeBytes),
			plural(s.Files, "file", "files"), plural(s.Dirs, "dir", "dirs"), note)
		for _, e := range entriesOf(&s.Node, filesByDir(s.TopFiles), "size", 5) {
			if e.node != nil {
				fmt.Fprintf(w, "  %10s  %s/\n", units.FormatIEC(e.node.SizeBytes), safe(e.node.Path))
			} else {
				fmt.Fprintf(w, "  %10s  %s\n", units.FormatIEC(e.file.SizeBytes), safe(e.file.Path))
			}
		}
	}
}

// eventKey tells one deletion's records apart from another's: its pending
// record and the record that settles it share it.
func eventKey(r journal.Evicted) string {
	return fmt.Sprint(r.SweepID, "|", r.DeletionID, "|", r.Path, "|", r.Holder)
}

// evictionOf is ev's deletion record, if ev is a readable one.
func evictionOf(ev project.Event) (journal.Evicted, bool) {
	if ev.Type != journal.TypeEvicted {
		return journal.Evicted{}, false
	}
	p, err := ev.Decode()
	r, ok := p.(journal.Evicted)
	return r, ok && err == nil
}

// settledDeletions drops the pending record of every deletion whose
// settling record is in evs (newest first): a deletion is shown once,
// with its final state.
func settledDeletions(evs []project.Event) []project.Event {
	settled := map[string]bool{}
	var out []project.Event
	for _, ev := range evs {
		if r, ok := evictionOf(ev); ok {
			k := eventKey(r)
			if r.State == journal.StatePending {
				if settled[k] {
					continue
				}
			} else {
				settled[k] = true
			}
		}
		out = append(out, ev)
	}
	return out
}

// eventLine is one journal record as one line: when, what, where, how
// much, and who.
func eventLine(ev project.Event) string {
	var what string
	if p, err := ev.Decode(); err == nil {
		what = eventDetail(p)
	} else {
		what = rawPayload(ev.Payload)
	}
	where := ""
	if ev.Project != "" {
		where = safe(ev.Project) + ": "
	}
	return fmt.Sprintf("%s  %-23s %s%s (by %s)", when(ev.At), ev.Type, where, what, safe(ev.Actor))
}

// rawPayload is a record this version cannot read, as one line of its JSON.
func rawPayload(raw []byte) string {
	var p map[string]any
	json.Unmarshal(raw, &p)
	if p == nil {
		p = map[string]any{}
	}
	data, _ := json.Marshal(p)
	return line(string(data))
}

func limitsText(l journal.Limits) string {
	var parts []string
	for _, f := range []struct {
		n    uint64
		name string
	}{{l.BytesSoft, "soft"}, {l.BytesHard, "hard"}} {
		if f.n > 0 {
			parts = append(parts, f.name+" "+units.FormatIEC(f.n))
		}
	}
	for _, f := range []struct {
		n    uint64
		name string
	}{{l.InodesSoft, "inodes soft"}, {l.InodesHard, "inodes hard"}} {
		if f.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.name, f.n))
		}
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}

// eventDetail is what a record says, in words.
func eventDetail(p journal.Payload) string {
	switch p := p.(type) {
	case journal.Evicted:
		return evictedDetail(p)
	case journal.Swept:
		s := fmt.Sprintf("sweep %s: %s, %s freed", p.SweepID, plural(p.EvictedEntries, "entry", "entries"), units.FormatIEC(p.FreedBytes))
		if len(p.Skipped) > 0 {
			s += ", " + plural(len(p.Skipped), "entry", "entries") + " left alone"
		}
		return s
	case journal.QuotaExceeded:
		s := fmt.Sprintf("%s over its soft limit: %s of %s", p.Area, units.FormatIEC(p.UsedBytes), units.FormatIEC(p.BytesSoft))
		if p.BytesHard != nil && *p.BytesHard > 0 {
			s += " (hard " + units.FormatIEC(*p.BytesHard) + ")"
		}
		return s
	case journal.Snapshot:
		var size uint64
		for _, t := range p.Trees {
			size += t.SizeBytes
		}
		s := fmt.Sprintf("snapshot of %s, %s", plural(len(p.Trees), "tree", "trees"), units.FormatIEC(size))
		if p.Failed > 0 {
			s += fmt.Sprintf(", %d failed", p.Failed)
		}
		return s + ", " + units.FormatIEC(p.FreeBytes) + " free"
	case journal.QuotaChanged:
		return fmt.Sprintf("%s limits %s → %s", p.Area, limitsText(p.Old), limitsText(p.New))
	case journal.ProjectAdded:
		var parts []string
		for _, t := range p.Trees {
			parts = append(parts, fmt.Sprintf("%s %s", t.Area, limitsText(t.Limits)))
		}
		return "added: " + strings.Join(parts, "; ")
	case journal.ProjectRemoved:
		if p.Purged {
			return "removed, its trees purged"
		}
		return "removed (its data stays on disk)"
	case journal.SettingChanged:
		return fmt.Sprintf("setting %s: %s → %s", p.Key, settingText(p.Key, p.Old), settingText(p.Key, p.New))
	case journal.Repaired:
		return fmt.Sprintf("repaired %s %s: %s", p.Kind, safe(strings.TrimSpace(p.Area+" "+p.Path)), line(p.Detail))
	case journal.RootInitialised:
		return "root initialised at " + safe(p.Root)
	}
	data, _ := json.Marshal(p)
	return rawPayload(data)
}

func evictedDetail(p journal.Evicted) string {
	verb := map[string]string{journal.StatePending: "deleting", journal.StateDone: "deleted", journal.StatePartial: "partly deleted",
		journal.StateFailed: "failed to delete"}[p.State]
	if p.Entries == 0 && !p.Recovered {
		// Nothing went: the tenant's tree changed under the removal.
		switch p.State {
		case journal.StateDone:
			verb = "found nothing to delete at"
		case journal.StatePartial:
			verb = "left in place"
		}
	}
	if verb == "" {
		verb = p.State
	}
	s := fmt.Sprintf("%s %s, %s", verb, safe(p.Path), units.FormatIEC(p.Bytes))
	if p.Entries > 0 {
		s += ", " + plural(p.Entries, "entry", "entries")
	}
	if p.Reason != "" {
		s += ": " + line(p.Reason)
	}
	if p.Error != "" {
		s += ": error: " + line(p.Error)
	}
	if p.SweepID != "" {
		s += " [" + p.SweepID + "]"
	}
	return s
}

// settingText prints a setting's stored form as settings list does: sizes
// in IEC, durations in one unit system ("2h", "1d"), the rest as given.
func settingText(key, raw string) string {
	s, err := settings.Lookup(key)
	if err != nil || raw == "" {
		return raw
	}
	return humanSetting(settings.Value{Setting: s, Value: raw})
}
