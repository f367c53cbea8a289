// Package migrations owns the schema: the migrations, applied in order and
// each once, on both SQLite and PostgreSQL, and the versions of xfsq a
// database at a given schema version works with.
//
// It must never edit a released migration, and reads or writes no row
// beyond schema_migrations and schema_compat.
package migrations

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// All are the migrations, applied in order, each once; never edit a released one,
// append a new one. {{serial}} is the dialect's auto-increment key,
// {{bytes}} its type for bytes, {{json COLUMN FIELD}} a JSON field's text
// and {{text_bytes COLUMN}} a text as bytes (see dialect).
var All = []string{
	// 1: the registry, the journal, settings and leases.
	`CREATE TABLE projects (
		host       TEXT   NOT NULL,
		name       TEXT   NOT NULL,
		state      TEXT   NOT NULL,          -- adding | ready | removing
		created_at BIGINT NOT NULL,
		adder      TEXT   NOT NULL DEFAULT '', -- pid of an add or remove in progress
		PRIMARY KEY (host, name)
	);
	CREATE TABLE trees (
		host        TEXT    NOT NULL,
		project     TEXT    NOT NULL,
		area        TEXT    NOT NULL,
		path        TEXT    NOT NULL,          -- relative to the sandbox root
		backend     TEXT    NOT NULL,
		fs_uuid     TEXT    NOT NULL,
		project_id  BIGINT  NOT NULL,
		bytes_soft  BIGINT  NOT NULL DEFAULT 0,
		bytes_hard  BIGINT  NOT NULL DEFAULT 0,
		inodes_soft BIGINT  NOT NULL DEFAULT 0,
		inodes_hard BIGINT  NOT NULL DEFAULT 0,
		created_dir BOOLEAN NOT NULL DEFAULT FALSE, -- xfsq made the directory
		PRIMARY KEY (host, project, area),
		FOREIGN KEY (host, project) REFERENCES projects (host, name) ON DELETE CASCADE
	);
	CREATE TABLE project_ids (
		fs_uuid    TEXT   NOT NULL,
		project_id BIGINT NOT NULL,
		owner      TEXT   NOT NULL,
		created_at BIGINT NOT NULL,
		PRIMARY KEY (fs_uuid, project_id)
	);
	CREATE TABLE events (
		id      {{serial}},
		at      BIGINT NOT NULL,
		type    TEXT   NOT NULL,
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL DEFAULT '',
		actor   TEXT   NOT NULL,
		payload TEXT   NOT NULL
	);
	CREATE INDEX events_type_at ON events (type, at);
	CREATE INDEX events_project_at ON events (project, at);
	CREATE TABLE settings (
		host       TEXT   NOT NULL,
		key        TEXT   NOT NULL,
		value      TEXT   NOT NULL,
		updated_at BIGINT NOT NULL,
		PRIMARY KEY (host, key)
	);
	CREATE TABLE leases (
		host       TEXT   NOT NULL,
		project    TEXT   NOT NULL,
		run        TEXT   NOT NULL,
		expires_at BIGINT NOT NULL,
		PRIMARY KEY (host, project, run)
	);`,
	// 2: fallback accounting: the last walk of each tree, writes committed
	// through xfsq since (the ledger), and reservations of writes in flight.
	`ALTER TABLE trees ADD COLUMN walked_bytes BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE trees ADD COLUMN walked_inodes BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE trees ADD COLUMN walked_at BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE trees ADD COLUMN soft_exceeded BOOLEAN NOT NULL DEFAULT FALSE;
	CREATE TABLE ledger (
		id      {{serial}},
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL,
		area    TEXT   NOT NULL,
		bytes   BIGINT NOT NULL, -- signed: a shrinking replacement is negative
		inodes  BIGINT NOT NULL,
		at      BIGINT NOT NULL
	);
	CREATE INDEX ledger_tree ON ledger (host, project, area);
	CREATE TABLE reservations (
		id         {{serial}},
		host       TEXT   NOT NULL,
		project    TEXT   NOT NULL,
		area       TEXT   NOT NULL,
		bytes      BIGINT NOT NULL,
		inodes     BIGINT NOT NULL,
		holder     TEXT   NOT NULL,
		temp_path  TEXT   NOT NULL, -- relative to the root; removed when reclaimed
		expires_at BIGINT NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE INDEX reservations_tree ON reservations (host, project, area);`,
	// 3: snapshots: totals per tree per walk (for growth), and the latest
	// full tree of each (bounded by the walk's depth and top-K).
	`CREATE TABLE snapshots (
		id             {{serial}},
		host           TEXT    NOT NULL,
		project        TEXT    NOT NULL,
		area           TEXT    NOT NULL,
		at             BIGINT  NOT NULL,
		size_bytes     BIGINT  NOT NULL,
		apparent_bytes BIGINT  NOT NULL,
		files          BIGINT  NOT NULL,
		dirs           BIGINT  NOT NULL,
		mtime          BIGINT  NOT NULL,
		partial        BOOLEAN NOT NULL,
		errors         BIGINT  NOT NULL,
		kernel_bytes   BIGINT  NOT NULL DEFAULT -1
	);
	CREATE INDEX snapshots_tree_at ON snapshots (host, project, area, at);
	CREATE TABLE snapshot_trees (
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL,
		area    TEXT   NOT NULL,
		at      BIGINT NOT NULL,
		tree    TEXT   NOT NULL,
		PRIMARY KEY (host, project, area)
	);`,
	// 4: one sweep per project at a time, across processes.
	`CREATE TABLE sweep_locks (
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL,
		holder  TEXT   NOT NULL,
		at      BIGINT NOT NULL,
		PRIMARY KEY (host, project)
	);`,
	// 5: deletions journalled as pending and not yet confirmed, kept beside
	// the journal so that finding them does not read every storage.evicted
	// record ever written. Filled from the journal once, in one pass (a
	// window, not a query per record): the latest record of each (sweep,
	// path) when it is a pending one.
	`CREATE TABLE evictions_pending (
		host     TEXT   NOT NULL,
		sweep_id TEXT   NOT NULL,           -- '' outside sweeps (purge, files rm)
		path     TEXT   NOT NULL,
		event_id BIGINT NOT NULL,           -- the pending record in events
		PRIMARY KEY (host, sweep_id, path)
	);
	INSERT INTO evictions_pending (host, sweep_id, path, event_id)
	SELECT host, sweep_id, path, id FROM (
		SELECT host, sweep_id, path, id, state,
			ROW_NUMBER() OVER (PARTITION BY host, sweep_id, path ORDER BY id DESC) AS newest
		FROM (
			SELECT host, id,
				COALESCE({{json payload sweep_id}}, '') AS sweep_id,
				COALESCE({{json payload path}}, '') AS path,
				{{json payload state}} AS state
			FROM events WHERE type = 'storage.evicted'
		) evicted
	) ranked
	WHERE newest = 1 AND state = 'pending';`,
	// 6: a snapshot's tree is kept as bytes (the third stored form is
	// binary, and a PostgreSQL TEXT cannot hold it); the trees kept so far,
	// JSON, are carried over as their UTF-8 bytes.
	`CREATE TABLE snapshot_trees_bytes (
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL,
		area    TEXT   NOT NULL,
		at      BIGINT NOT NULL,
		tree    {{bytes}} NOT NULL,
		PRIMARY KEY (host, project, area)
	);
	INSERT INTO snapshot_trees_bytes (host, project, area, at, tree)
	SELECT host, project, area, at, {{text_bytes tree}} FROM snapshot_trees;
	DROP TABLE snapshot_trees;
	ALTER TABLE snapshot_trees_bytes RENAME TO snapshot_trees;`,
	// 7: deletions outside sweeps (files rm, purge) carry an id of their
	// own, so two of the same path no longer share one pending row; and the
	// digest of every sweep plan saved for review, so that --apply runs
	// only a plan this store made, unedited, once.
	`CREATE TABLE evictions_pending_keyed (
		host        TEXT   NOT NULL,
		sweep_id    TEXT   NOT NULL,
		path        TEXT   NOT NULL,
		deletion_id TEXT   NOT NULL DEFAULT '', -- '' in sweeps: (sweep_id, path) is already one deletion
		event_id    BIGINT NOT NULL,
		PRIMARY KEY (host, sweep_id, path, deletion_id)
	);
	INSERT INTO evictions_pending_keyed (host, sweep_id, path, deletion_id, event_id)
	SELECT host, sweep_id, path, '', event_id FROM evictions_pending;
	DROP TABLE evictions_pending;
	ALTER TABLE evictions_pending_keyed RENAME TO evictions_pending;
	CREATE TABLE sweep_plans (
		host       TEXT   NOT NULL,
		plan_id    TEXT   NOT NULL,
		digest     TEXT   NOT NULL,           -- SHA-256 of the plan's content, hex
		created_at BIGINT NOT NULL,
		applied_at BIGINT NOT NULL DEFAULT 0, -- 0: not yet applied
		PRIMARY KEY (host, plan_id)
	);`,
	// 8: when a tree's last walk ended, beside when it started: a
	// deletion's credit that began before a walk ended may already be in
	// the walk's figure, and counting it again would under-count.
	`ALTER TABLE trees ADD COLUMN walked_end BIGINT NOT NULL DEFAULT 0;`,
	// 9: the fallback's grace timers: since when a tree's usage has been
	// over its soft byte and inode limits (0: not over), as the kernel
	// keeps them on XFS; soft_grace after that, admission denies.
	`ALTER TABLE trees ADD COLUMN bytes_soft_since BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE trees ADD COLUMN inodes_soft_since BIGINT NOT NULL DEFAULT 0;`,
	// 10: a saved plan's content beside its digest, so that the API applies
	// a reviewed plan by its id alone (NULL: saved before, by --plan-out
	// only); and the scheduled passes of xfsq serve, one row per pass and
	// host: who runs it now and when it last started and finished, so that
	// one runs at a time across processes, once per interval, and a pass
	// whose process died is run again.
	`ALTER TABLE sweep_plans ADD COLUMN body {{bytes}};
	CREATE TABLE passes (
		host        TEXT   NOT NULL,
		pass        TEXT   NOT NULL,
		holder      TEXT   NOT NULL DEFAULT '', -- '' when none runs
		started_at  BIGINT NOT NULL DEFAULT 0,
		finished_at BIGINT NOT NULL DEFAULT 0,
		PRIMARY KEY (host, pass)
	);`,
	// 11: a version per project, moved by a trigger in the same
	// transaction as every change to what a read of the project returns
	// (its row, its trees, its ledger and reservations), and a version of
	// the host's settings under project '': a long-lived reader keeps
	// each project's answer until that project's version moves, rather
	// than until anything anywhere is committed. The triggers are the
	// dialect's (versionTriggers), applied after this.
	`CREATE TABLE project_versions (
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL, -- '': the host's settings
		version BIGINT NOT NULL,
		PRIMARY KEY (host, project)
	);`,
	// 12: which change of the store last moved each version (the
	// dialect's changeOrder, set by the triggers that versionTriggers
	// makes anew after this), so that a long-lived reader follows every
	// project's version by reading only the rows changed since its last
	// read (versionFeed), one small read per commit anywhere rather than
	// one lookup per project per commit.
	`ALTER TABLE project_versions ADD COLUMN changed BIGINT NOT NULL DEFAULT 0;
	CREATE INDEX project_versions_changed ON project_versions (host, changed);`,
	// 13: each tree's ledger sum beside its rows (what admission adds to
	// the last walk), kept by the writes that add rows and the walks that
	// drop them: every write of the host reads the sum of every tree
	// under the one admission lock, and summing the rows themselves made
	// that grow with whatever another tenant had written since its walk.
	`ALTER TABLE trees ADD COLUMN ledger_bytes BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE trees ADD COLUMN ledger_inodes BIGINT NOT NULL DEFAULT 0;
	UPDATE trees SET
		ledger_bytes = COALESCE((SELECT SUM(l.bytes) FROM ledger l WHERE l.host = trees.host AND l.project = trees.project AND l.area = trees.area), 0),
		ledger_inodes = COALESCE((SELECT SUM(l.inodes) FROM ledger l WHERE l.host = trees.host AND l.project = trees.project AND l.area = trees.area), 0);`,
	// 14: the inode a write's ledger row counts whole (0: none, or not one
	// file alone), so that an overwrite of that file through xfsq credits
	// what the row counted, and only that, once (Store.Placed): the
	// replaced file's own blocks may hold bytes written outside xfsq,
	// which nothing counted.
	`ALTER TABLE ledger ADD COLUMN ino BIGINT NOT NULL DEFAULT 0;
	CREATE INDEX ledger_ino ON ledger (host, project, area, ino);`,
	// 15: whether a tree's last walk met mount points it could not look
	// beneath (a process without CAP_SYS_ADMIN cannot copy the mount
	// without them): what is under them may be the tenant's and was not
	// counted, so until a walk sees the whole tree no removal or overwrite
	// is credited by it (Store.Baseline, Manager.RemovalCutoff).
	`ALTER TABLE trees ADD COLUMN walked_hidden BOOLEAN NOT NULL DEFAULT FALSE;`,
	// 16: the inode of a write's named temporary file (0: none yet, or
	// unnamed): a walk leaves out only that inode at the name, never a
	// file a tenant put there (Store.BeginWalk).
	`ALTER TABLE reservations ADD COLUMN temp_ino BIGINT NOT NULL DEFAULT 0;`,
	// 17: the fleet: each serving host's heartbeat (what it runs, on what,
	// and when it last said so), so that a host that stopped reporting
	// shows as stale rather than missing; and its retirement, which keeps
	// its history but takes it off the live list (fleet.go).
	`CREATE TABLE fleet_hosts (
		host        TEXT   NOT NULL PRIMARY KEY,
		first_seen  BIGINT NOT NULL,
		last_seen   BIGINT NOT NULL,
		version     TEXT   NOT NULL DEFAULT '',
		backend     TEXT   NOT NULL DEFAULT '',
		root        TEXT   NOT NULL DEFAULT '',
		projects    BIGINT NOT NULL DEFAULT 0,
		interval_us BIGINT NOT NULL DEFAULT 0, -- the heartbeat interval it announced
		retired_at  BIGINT NOT NULL DEFAULT 0, -- 0: not retired
		retired_by  TEXT   NOT NULL DEFAULT ''
	);`,
	// 18: a fleet on one store. roots binds each host name to one root's
	// identity (a random id kept in the root's .xfsq/, and its
	// filesystem's), so that no other root can act under that name.
	// holders is each process's lease (heartbeat and expiry, by the
	// database's clock): a holder on another machine is gone once its
	// lease has expired. id_registry is the project-ID registry per host:
	// project_ids was keyed by filesystem (a fallback root's by its path),
	// so two hosts with the same root path shared one sequence; each row
	// goes to every host whose trees used its key (every host, for a key
	// no tree uses any more), so no host reuses an ID it had. project_ids
	// stays for binaries that predate this one.
	`CREATE TABLE roots (
		host     TEXT   NOT NULL PRIMARY KEY,
		root_id  TEXT   NOT NULL,
		fs_id    TEXT   NOT NULL DEFAULT '', -- '' when the filesystem has no identity to read
		path     TEXT   NOT NULL,
		bound_at BIGINT NOT NULL
	);
	CREATE UNIQUE INDEX roots_root_id ON roots (root_id);
	CREATE TABLE holders (
		process    TEXT   NOT NULL PRIMARY KEY, -- pid.start@hostname
		host       TEXT   NOT NULL,             -- the host name it serves
		machine    TEXT   NOT NULL,             -- its kernel's boot and pid namespace
		renewed_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE TABLE id_registry (
		host       TEXT   NOT NULL,
		fs_key     TEXT   NOT NULL,
		project_id BIGINT NOT NULL,
		owner      TEXT   NOT NULL,
		created_at BIGINT NOT NULL,
		PRIMARY KEY (host, fs_key, project_id)
	);
	INSERT INTO id_registry (host, fs_key, project_id, owner, created_at)
	SELECT u.host, p.fs_uuid, p.project_id, p.owner, p.created_at
	FROM project_ids p JOIN (SELECT DISTINCT host, fs_uuid FROM trees) u ON u.fs_uuid = p.fs_uuid;
	INSERT INTO id_registry (host, fs_key, project_id, owner, created_at)
	SELECT h.host, p.fs_uuid, p.project_id, p.owner, p.created_at
	FROM project_ids p JOIN (SELECT DISTINCT host FROM projects) h ON 1 = 1
	WHERE NOT EXISTS (SELECT 1 FROM trees t WHERE t.fs_uuid = p.fs_uuid);`,
	// 19: the journal read by host (Blank at every command's start, events
	// listing, a scrape's read, pruning) without a scan of every host's
	// events; and, per schema version, the oldest version of xfsq's
	// schema that still works on it (oldestBinary), so that hosts sharing
	// one database are upgraded one at a time. (IF NOT EXISTS: an operator
	// may build the index beforehand, CONCURRENTLY, docs/fleet.md.)
	`CREATE INDEX IF NOT EXISTS events_host_id ON events (host, id);
	CREATE TABLE schema_compat (
		version       INTEGER PRIMARY KEY,
		oldest_binary INTEGER NOT NULL -- a binary of this schema version or later works on it
	);`,
	// 20: which limits each tree is over, as last journalled (a row per
	// tree and limit; none: under it), so that every crossing is
	// journalled once whoever sees it first, in whichever process
	// (RecordCrossings); seeded from the soft_exceeded mark it replaces.
	// And the trees of past snapshots, one every HistoryEvery at most, so
	// that what changed in a tree is read without walking it again (Diff).
	// And what the sweep policies would free in each tree, as the last plan
	// (a dry run, a sweep, the scheduled pass) found, less what it freed.
	`CREATE TABLE limit_crossings (
		host       TEXT    NOT NULL,
		project    TEXT    NOT NULL,
		area       TEXT    NOT NULL,
		limit_name TEXT    NOT NULL, -- bytes_soft | bytes_hard | inodes_soft | inodes_hard
		over       BOOLEAN NOT NULL,
		since      BIGINT  NOT NULL, -- when the state was recorded
		PRIMARY KEY (host, project, area, limit_name),
		FOREIGN KEY (host, project, area) REFERENCES trees (host, project, area) ON DELETE CASCADE
	);
	INSERT INTO limit_crossings (host, project, area, limit_name, over, since)
	SELECT host, project, area, 'bytes_soft', TRUE, 0 FROM trees
	WHERE soft_exceeded AND bytes_soft > 0 AND walked_bytes + ledger_bytes > bytes_soft;
	INSERT INTO limit_crossings (host, project, area, limit_name, over, since)
	SELECT host, project, area, 'inodes_soft', TRUE, 0 FROM trees
	WHERE soft_exceeded AND inodes_soft > 0 AND walked_inodes + ledger_inodes > inodes_soft;
	CREATE TABLE snapshot_history (
		host    TEXT   NOT NULL,
		project TEXT   NOT NULL,
		area    TEXT   NOT NULL,
		at      BIGINT NOT NULL,
		digest  TEXT   NOT NULL, -- SHA-256 of tree, hex: an unchanged tree is not kept again
		tree    {{bytes}} NOT NULL,
		PRIMARY KEY (host, project, area, at)
	);
	CREATE TABLE reclaimable (
		host       TEXT   NOT NULL,
		project    TEXT   NOT NULL,
		area       TEXT   NOT NULL,
		bytes      BIGINT NOT NULL, -- what the sweep policies would free, as last planned
		entries    BIGINT NOT NULL,
		planned_at BIGINT NOT NULL,
		PRIMARY KEY (host, project, area)
	);`,
	// 21: what each scheduled snapshot pass found free on the root's
	// filesystem, a row per pass beside its storage.snapshot record: that
	// record lists every tree (3 MB at 10,000 projects), and the disk's
	// trend and history parsed each one for one figure (PassFree). Seeded
	// from the records kept.
	`CREATE TABLE pass_free (
		host       TEXT   NOT NULL,
		at         BIGINT NOT NULL,
		free_bytes BIGINT NOT NULL,
		PRIMARY KEY (host, at)
	);
	INSERT INTO pass_free (host, at, free_bytes)
	SELECT host, at, CAST({{json payload free_bytes}} AS BIGINT) FROM events
	WHERE type = 'storage.snapshot' AND {{json payload free_bytes}} IS NOT NULL
	ON CONFLICT (host, at) DO NOTHING;`,
	// 22: each host's journal totals as of a position in its journal (what
	// a follower counts, as JournalTotals sums them, over its records up to
	// up_to), so that a restarted server's first scrape sums only the
	// records after it rather than the whole journal; and a prune keeps
	// the totals of the records it removes. buckets are the histograms'
	// bounds the totals were counted in (a checkpoint in others is not
	// used); totals is JSON (journalCheckpoint).
	`CREATE TABLE journal_checkpoints (
		host       TEXT   NOT NULL PRIMARY KEY,
		up_to      BIGINT NOT NULL, -- every followed record of the host up to this ID is in totals
		written_at BIGINT NOT NULL,
		buckets    TEXT   NOT NULL,
		totals     TEXT   NOT NULL
	);`,
}

// oldestBinary is, for the migrations that only expand the schema (add a
// table, a column with a default, an index), the oldest schema version a
// binary may know and still work on a database migrated this far: its
// statements still run and mean what they meant. A migration not listed
// contracts (drops, renames, changes a meaning) and needs a binary that
// knows it. Expand-then-contract: a change an older binary cannot live with
// is first made as an expansion both work with, and the contraction comes
// a release later, once every host runs the newer binary.
var oldestBinary = map[int]int{
	17: 16, // fleet_hosts: a table older binaries never read
	19: 18, // an index and schema_compat itself
	21: 20, // pass_free: older binaries neither read nor write it (their passes are missing from the disk's trend until they are upgraded)
	22: 21, // journal_checkpoints: older binaries neither read nor write it (their first scrape sums the whole journal; a host taken back to one prunes past its checkpoint, whose totals then miss those records)
	// 20 contracts: soft_exceeded's meaning moves to limit_crossings.
	// 18 contracts: older binaries write project_ids, not id_registry, and hold no lease.
}

// compatSince is the migration that made schema_compat.
const compatSince = 19

// compatibleFrom is the oldest binary schema version that works on
// schema version v.
func compatibleFrom(v int) int {
	if o, ok := oldestBinary[v]; ok {
		return o
	}
	return v
}

// SchemaTooNewError is a database migrated past what this binary knows by
// a migration it cannot work with.
type SchemaTooNewError struct {
	Database, Binary, Needs int
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("the database is at schema version %d, which needs xfsq of schema version %d or later; this xfsq knows schema version %d",
		e.Database, e.Needs, e.Binary)
}

// Hint says what to do.
func (e *SchemaTooNewError) Hint() string {
	return "upgrade xfsq on this host to the release the other hosts already run (docs/fleet.md, upgrading host by host)"
}

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int { return len(All) }

// CheckNewer is nil when a database at schema version current, past this
// binary's, is one it works on: every migration past it says so in
// schema_compat (a version without a row there is taken as a contraction).
func CheckNewer(ctx context.Context, s *base.DB, current int) error {
	var needs int
	if err := s.Get(ctx, &needs, `SELECT COALESCE(MAX(COALESCE(c.oldest_binary, m.version)), 0)
		FROM schema_migrations m LEFT JOIN schema_compat c ON c.version = m.version WHERE m.version > ?`, len(All)); err != nil {
		return fmt.Errorf("the database is at schema version %d, newer than this xfsq knows (%d), and says nothing of which older ones it works with: upgrade xfsq (%w)",
			current, len(All), err)
	}
	if needs > len(All) {
		return &SchemaTooNewError{Database: current, Binary: len(All), Needs: needs}
	}
	return nil
}

// ddl holds, per migration number, statements run whole after that
// migration's shared text: a trigger's body holds semicolons, which the
// shared text's statement splitting would cut.
var ddl = map[int]func(postgres bool) []string{
	11: func(postgres bool) []string { return versionTriggers(postgres, false) },
	12: func(postgres bool) []string { return versionTriggers(postgres, true) },
}

// versionedTables are the tables whose rows a read of a project (Manager
// Show, Usage) is made of, with the column naming the project ("" for a
// host-wide table: settings change how every project is judged).
var versionedTables = []struct{ table, project string }{
	{"projects", "name"}, {"trees", "project"}, {"ledger", "project"}, {"reservations", "project"}, {"settings", ""},
}

// versionTriggers moves project_versions on every insert, update and delete
// of versionedTables; from migration 12 on (changed) they also stamp the
// row with the change's place in commit order, replacing 11's triggers.
func versionTriggers(postgres, changed bool) []string {
	var out []string
	if postgres {
		for _, t := range versionedTables {
			col := "''"
			if t.project != "" {
				col = "r." + t.project
			}
			upsert := `INSERT INTO project_versions (host, project, version) VALUES (r.host, ` + col + `, 1)
		ON CONFLICT (host, project) DO UPDATE SET version = project_versions.version + 1;`
			create := "CREATE FUNCTION"
			if changed {
				upsert = `INSERT INTO project_versions (host, project, version, changed) VALUES (r.host, ` + col + `, 1, ` + ChangeOrder(true, "r.host") + `)
		ON CONFLICT (host, project) DO UPDATE SET version = project_versions.version + 1, changed = EXCLUDED.changed;`
				create = "CREATE OR REPLACE FUNCTION"
			}
			out = append(out, create+` xfsq_version_`+t.table+`() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
	`+upsert+`
	RETURN NULL;
END $$`)
			if !changed { // 12 replaces the functions; the triggers stay
				out = append(out, `CREATE TRIGGER `+t.table+`_version AFTER INSERT OR UPDATE OR DELETE ON `+t.table+
					` FOR EACH ROW EXECUTE FUNCTION xfsq_version_`+t.table+`()`)
			}
		}
		return out
	}
	for _, t := range versionedTables {
		for _, op := range []struct{ event, row string }{{"INSERT", "NEW"}, {"UPDATE", "NEW"}, {"DELETE", "OLD"}} {
			col := "''"
			if t.project != "" {
				col = op.row + "." + t.project
			}
			name := t.table + `_version_` + strings.ToLower(op.event)
			upsert := `INSERT INTO project_versions (host, project, version) VALUES (` + op.row + `.host, ` + col + `, 1)
		ON CONFLICT (host, project) DO UPDATE SET version = version + 1;`
			if changed {
				out = append(out, `DROP TRIGGER `+name)
				upsert = `INSERT INTO project_versions (host, project, version, changed) VALUES (` + op.row + `.host, ` + col + `, 1, ` + ChangeOrder(false, op.row+".host") + `)
		ON CONFLICT (host, project) DO UPDATE SET version = version + 1, changed = excluded.changed;`
			}
			out = append(out, `CREATE TRIGGER `+name+` AFTER `+op.event+` ON `+t.table+` BEGIN
	`+upsert+`
END`)
		}
	}
	return out
}

// ChangeOrder is the expression a version trigger stamps a change with,
// such that a reader who has read every row stamped below some point has
// seen every change committed before it (versionFeed.follow).
//
// SQLite runs one writing transaction at a time, so the host's highest
// stamp plus one (an index lookup) orders changes as they commit. Under
// PostgreSQL transactions commit in any order and a sequence's values are
// taken before commit, so a stamp read past could still be followed by a
// lower one committing; the stamp is therefore the writing transaction's
// id, and the reader resumes not after the highest it saw but at the
// oldest transaction still running when it read (its snapshot's xmin):
// every lower id had ended by then, and whatever commits later has a
// higher one. (A transaction left open anywhere in the cluster holds that
// horizon back: the reads then grow towards every row of the host, which
// is what a read without the feed costs, never wrong.)
func ChangeOrder(postgres bool, host string) string {
	if postgres {
		return `pg_current_xact_id()::text::bigint`
	}
	return `(SELECT COALESCE(MAX(changed), 0) + 1 FROM project_versions WHERE host = ` + host + `)`
}

// jsonField matches {{json COLUMN FIELD}}: the text of a top-level field of
// a JSON column, in the dialect's syntax. textBytes matches {{text_bytes
// COLUMN}}: a text column's value as bytes.
// Compiled on first use: only a migration needs them, and every command
// would pay for them at start-up.
var (
	jsonField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{json ([a-z_.]+) ([a-z_]+)\}\}`) })
	textBytes = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{text_bytes ([a-z_.]+)\}\}`) })
)

// dialect rewrites a migration's placeholders for SQLite or PostgreSQL:
// {{serial}} and {{bytes}} are column types, the others expressions.
func dialect(migration string, postgres bool) string {
	serial, bytes, json, toBytes := "INTEGER PRIMARY KEY AUTOINCREMENT", "BLOB", "json_extract($1, '$$.$2')", "CAST($1 AS BLOB)"
	if postgres {
		serial, bytes, json, toBytes = "BIGSERIAL PRIMARY KEY", "BYTEA", "($1::json ->> '$2')", "convert_to($1, 'UTF8')"
	}
	m := strings.NewReplacer("{{serial}}", serial, "{{bytes}}", bytes).Replace(migration)
	return textBytes().ReplaceAllString(jsonField().ReplaceAllString(m, json), toBytes)
}

// Migrate brings the schema of s up to date.
func Migrate(ctx context.Context, s *base.DB) error {
	// Up to date, as nearly always: a read says so without the write lock,
	// which a command that only reads would otherwise wait for behind any
	// writer (SQLite takes it at BEGIN).
	var current int
	if err := s.Get(ctx, &current, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`); err == nil && current >= len(All) {
		if current > len(All) {
			return CheckNewer(ctx, s, current)
		}
		return nil
	}
	return s.InTx(ctx, func(tx *base.Tx) error {
		// Two processes starting at once must not both migrate.
		if err := tx.Lock(ctx, "xfsq-migrate"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
			return err
		}
		var current int
		if err := tx.Get(ctx, &current, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`); err != nil {
			return err
		}
		if current > len(All) {
			return CheckNewer(ctx, s, current)
		}
		for v := current + 1; v <= len(All); v++ {
			for _, stmt := range statements(dialect(All[v-1], s.Postgres)) {
				if strings.TrimSpace(stmt) == "" {
					continue
				}
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w", v, err)
				}
			}
			if f := ddl[v]; f != nil {
				for _, stmt := range f(s.Postgres) {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return fmt.Errorf("migration %d: %w", v, err)
					}
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, base.ToMicros(time.Now())); err != nil {
				return err
			}
			if v >= compatSince {
				if _, err := tx.Exec(ctx, `INSERT INTO schema_compat (version, oldest_binary) VALUES (?, ?)`, v, compatibleFrom(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// statements splits a migration into statements, dropping "--" comments
// first so that a ';' in a comment cannot split one. Migrations hold no
// string literals containing "--" or ';'.
func statements(migration string) []string {
	var b strings.Builder
	for _, line := range strings.Split(migration, "\n") {
		code, _, _ := strings.Cut(line, "--")
		b.WriteString(code + "\n")
	}
	return strings.Split(b.String(), ";")
}
