package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/follow"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func eventsCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "events", Usage: "the journal, newest first",
		Description: "One line a record: when (with its zone), what, where, how much, and who. A deletion is shown\n" +
			"once, with its final state (its pending record is dropped once settled).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "only this type, e.g. project.added, quota.changed, storage.evicted"},
			&cli.StringFlag{Name: "project", Usage: "only this project"},
			&cli.StringFlag{Name: "since", Usage: "only newer: a duration ago (24h, 7d), a date (2026-11-30), a local time (2026-11-30 10:00) or RFC 3339"},
			&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most this many"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print the last --limit oldest first, then each new record as it is journalled, until interrupted (with --json one object a line)"},
			onHostFlag(), allHostsFlag(),
		},
		Action: with(reads(cmdEvents)),
	}
}

func cmdEvents(e env) error {
	q := sandbox.EventQuery{Type: e.c.String("type"), Project: e.c.String("project"), Limit: e.c.Int("limit"),
		Hosts: cliargs.SplitList(e.c.String("on-host")), AllHosts: e.c.Bool("all-hosts")}
	if s := e.c.String("since"); s != "" {
		t, err := sandbox.ParseSince(s, time.Now())
		if err != nil {
			return cliargs.Usagef("--%v", err)
		}
		q.Since = t
	}
	if q.Limit < 1 {
		return cliargs.Usagef("--limit %d: use a positive number", q.Limit)
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		// A page is bounded; --limit is not, so the CLI follows the cursor.
		want, evs := q.Limit, []sandbox.Event{}
		for {
			q.Limit = min(want-len(evs), sandbox.MaxEventLimit)
			page, err := m.Events(ctx, q)
			if err != nil {
				return err
			}
			evs = append(evs, page.Events...)
			if page.Next == "" || len(evs) >= want {
				break
			}
			q.Cursor = page.Next
		}
		if e.c.Bool("follow") {
			return follow.Events(ctx, follow.Output{W: e.stdout, JSON: e.json(), Line: eventLine}, m.Events, q, evs)
		}
		return e.print(evs, func(w io.Writer) {
			for _, ev := range sandbox.SettledDeletions(evs) {
				if q.AllHosts || len(q.Hosts) > 0 {
					fmt.Fprint(w, textout.Safe(ev.Host)+"  ") // across hosts, each line names its own
				}
				fmt.Fprintln(w, eventLine(ev))
			}
		})
	})
}

// eventLine is one journal record as one line: when, what, where, how
// much, and who.
func eventLine(ev sandbox.Event) string {
	var what string
	if p, err := ev.Decode(); err == nil {
		what = eventDetail(p)
	} else {
		what = rawPayload(ev.Payload)
	}
	where := ""
	if ev.Project != "" {
		where = textout.Safe(ev.Project) + ": "
	}
	return fmt.Sprintf("%s  %-23s %s%s (by %s)", textout.When(ev.At), ev.Type, where, what, textout.Safe(ev.Actor))
}

// rawPayload is a record this version cannot read, as one line of its JSON.
func rawPayload(raw []byte) string {
	var p map[string]any
	json.Unmarshal(raw, &p)
	if p == nil {
		p = map[string]any{}
	}
	data, _ := json.Marshal(p)
	return textout.Line(string(data))
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
		s := fmt.Sprintf("sweep %s: %s, %s freed", p.SweepID, textout.Plural(p.EvictedEntries, "entry", "entries"), units.FormatIEC(p.FreedBytes))
		if len(p.Skipped) > 0 {
			s += ", " + textout.Plural(len(p.Skipped), "entry", "entries") + " left alone"
		}
		return s
	case journal.QuotaExceeded:
		return exceededDetail(p)
	case journal.QuotaOK:
		return fmt.Sprintf("%s back under its %s: %s (seen by %s)", p.Area, limitWords(p.Limit), limitFigure(p.Limit, p.UsedBytes, p.UsedInodes, p.LimitValue), p.SeenBy)
	case journal.Snapshot:
		var size uint64
		for _, t := range p.Trees {
			size += t.SizeBytes
		}
		s := fmt.Sprintf("snapshot of %s, %s", textout.Plural(len(p.Trees), "tree", "trees"), units.FormatIEC(size))
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
		return fmt.Sprintf("repaired %s %s: %s", p.Kind, textout.Safe(strings.TrimSpace(p.Area+" "+p.Path)), textout.Line(p.Detail))
	case journal.RootInitialised:
		return "root initialised at " + textout.Safe(p.Root)
	case journal.HostRetired:
		return fmt.Sprintf("host %s retired, %s abandoned", textout.Safe(p.Host), textout.Plural(p.Abandoned, "pending deletion", "pending deletions"))
	case journal.RootBound:
		s := fmt.Sprintf("host bound to the root at %s (%s, %s)", textout.Safe(p.Root), textout.Safe(p.RootID), textout.Safe(p.Why))
		if p.TookFrom != nil {
			s += fmt.Sprintf(", taken over from %s (%s)", textout.Safe(p.TookFrom.Root), textout.Safe(p.TookFrom.RootID))
		}
		return s
	case journal.HolderTakenOver:
		return fmt.Sprintf("%s %s taken over from %s by %s: %s", strings.ReplaceAll(p.What, "_", " "), textout.Safe(p.Name), textout.Safe(p.From), textout.Safe(p.By), textout.Line(p.Why))
	}
	data, _ := json.Marshal(p)
	return rawPayload(data)
}

func evictedDetail(p journal.Evicted) string {
	verb := map[string]string{journal.StatePending: "deleting", journal.StateDone: "deleted", journal.StatePartial: "partly deleted",
		journal.StateFailed: "failed to delete", journal.StateAbandoned: "abandoned (host retired) the deletion of"}[p.State]
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
	s := fmt.Sprintf("%s %s, %s", verb, textout.Safe(p.Path), units.FormatIEC(p.Bytes))
	if p.Entries > 0 {
		s += ", " + textout.Plural(p.Entries, "entry", "entries")
	}
	if p.Reason != "" {
		s += ": " + textout.Line(p.Reason)
	}
	if p.Error != "" {
		s += ": error: " + textout.Line(p.Error)
	}
	if p.SweepID != "" {
		s += " [" + p.SweepID + "]"
	}
	return s
}

// exceededDetail words a limit reached; records made before every limit
// was journalled name none: theirs was the soft byte limit.
func exceededDetail(p journal.QuotaExceeded) string {
	if p.Limit == "" {
		s := fmt.Sprintf("%s over its soft limit: %s of %s", p.Area, units.FormatIEC(p.UsedBytes), units.FormatIEC(p.BytesSoft))
		if p.BytesHard != nil && *p.BytesHard > 0 {
			s += " (hard " + units.FormatIEC(*p.BytesHard) + ")"
		}
		return s
	}
	var used, limit uint64
	if p.UsedInodes != nil {
		used = *p.UsedInodes
	}
	if p.LimitValue != nil {
		limit = *p.LimitValue
	}
	s := fmt.Sprintf("%s reached its %s: %s", p.Area, limitWords(p.Limit), limitFigure(p.Limit, p.UsedBytes, used, limit))
	if p.GraceEndsAt != nil {
		s += ", grace ends " + textout.When(*p.GraceEndsAt)
	}
	return s + " (seen by " + p.SeenBy + ")"
}

// limitWords names a limit as a sentence does: "soft byte limit".
func limitWords(limit string) string {
	kind, res, _ := strings.Cut(limit, "_")
	return res + " " + map[string]string{"bytes": "byte", "inodes": "inode"}[kind] + " limit"
}

// limitFigure is usage against a limit in its unit.
func limitFigure(limit string, bytes, inodes, value uint64) string {
	if strings.HasPrefix(limit, "inodes") {
		return fmt.Sprintf("%d of %d inodes", inodes, value)
	}
	return units.FormatIEC(bytes) + " of " + units.FormatIEC(value)
}
