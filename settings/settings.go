// Package settings defines xfsq's installation settings: their names,
// defaults, accepted forms and validation. Values live in the store; this
// package must never read or write it, so the CLI, the API and the sweeper
// all validate the same way.
package settings

import (
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/units"
)

// Kind is the form a setting's value takes.
type Kind string

const (
	Size     Kind = "size"
	Duration Kind = "duration"
	Globs    Kind = "globs"
	// Percent is a number from 0 to 100, a trailing % allowed.
	Percent Kind = "percent"
	// Number is a non-negative decimal number, such as a load per core.
	Number Kind = "number"
)

// Setting describes one setting.
type Setting struct {
	Key     string `json:"key"`
	Kind    Kind   `json:"kind"`
	Default string `json:"default"`
	Help    string `json:"help"`
	// Env, if set, is read when the setting was never stored.
	Env string `json:"env,omitempty"`
	// Min is the shortest a duration setting may be, with the reason.
	Min    time.Duration `json:"-"`
	MinWhy string        `json:"-"`
	// Max is the longest a duration setting may be (0: no bound), with the reason.
	Max    time.Duration `json:"-"`
	MaxWhy string        `json:"-"`
	// ZeroOff, if set, says which safety rail a zero value switches off:
	// zero is then refused unless asked for explicitly (NormalizeExplicit),
	// so a slip such as "0s" for "0.5h" cannot disarm it.
	ZeroOff string `json:"-"`
	// ZeroMeans, if set, says what a zero duration means ("no scheduled
	// sweeps"): zero is then accepted below Min.
	ZeroMeans string `json:"-"`
}

// All lists every setting, in the order `settings list` shows them.
var All = []Setting{
	{Key: "default_quota", Kind: Size, Default: "50GiB", Env: "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES",
		ZeroOff: "new projects would get no workspace limit at all",
		Help:    "workspace hard limit given to new projects"},
	{Key: "default_cache_quota", Kind: Size, Default: "30GiB",
		Help: "cache hard limit given to new projects (the sweeper keeps caches under cache_quota_per_project, below it)"},
	{Key: "default_scratch_quota", Kind: Size, Default: "20GiB",
		ZeroOff: "a run could fill the disk through its project's scratch",
		Help:    "scratch hard limit given to new projects (scratch/PROJECT, shared by the project's runs in scratch/PROJECT/RUN)"},
	{Key: "default_inbound_quota", Kind: Size, Default: "10GiB",
		ZeroOff: "a channel could fill the disk through inbound/",
		Help:    "hard limit of the root's inbound tree (inbound/, channel staging): given to it at init (or by the doctor's repair) and applied to it at once when set"},
	{Key: "max_file_bytes", Kind: Size, Default: "1GiB",
		Help: "largest single write through the file layer (the API's and the CLI's); 0 for no limit"},
	{Key: "root_budget", Kind: Size, Default: "0",
		Help: "fallback backend: bytes all trees of the root may hold together; 0 for no shared budget"},
	{Key: "upload_refusal_drain", Kind: Size, Default: "8MiB",
		Help: "the server: how much of a refused request's body (an upload over the quota) is read and discarded, after the refusal is sent and for 2 s at most, so that a client sending the whole body before reading gets the refusal instead of a reset connection; 0 reads none"},
	{Key: "api_store_budget", Kind: Duration, Default: "5s",
		Min: 100 * time.Millisecond, MinWhy: "a request makes a few statements, each a round trip to the store",
		Max: 10 * time.Minute, MaxWhy: "a client and its proxy give up long before",
		Help: "the server: the longest one request may wait for the store, over all its calls together (a connection, each statement, the commit); a request that spends it answers 503 store unreachable, and a sweep stops before its next deletion. Read again every 10 s"},
	{Key: "reservation_ttl", Kind: Duration, Default: "10m",
		ZeroOff: "every write's reservation would lapse at once, so concurrent writers could together pass a limit",
		Help:    "fallback backend: a write's reservation that makes no progress for this long is reclaimed"},
	{Key: "cache_min_age", Kind: Duration, Default: "7d", Help: "cache entries modified more recently are never deleted"},
	{Key: "cache_quota_per_project", Kind: Size, Default: "20GiB",
		Help: "above it, the sweeper deletes the least recently modified top-level cache entries until under it"},
	{Key: "workspace_trash_globs", Kind: Globs, Default: "*.tmp,*.log,.out/,dist/,coverage/",
		Help: "only these are trash in a workspace (a trailing / matches directories)"},
	{Key: "workspace_trash_age", Kind: Duration, Default: "14d", Help: "workspace trash must be older than this to be swept"},
	{Key: "busy_grace", Kind: Duration, Default: "24h", ZeroOff: "a sweep could delete files being written right now",
		Help: "nothing modified more recently is touched, whatever the policy"},
	{Key: "soft_grace", Kind: Duration, Default: "7d",
		Min: time.Second, MinWhy: "the kernel reads a zero grace as its own default (7 days)",
		Max: 365 * 24 * time.Hour, MaxWhy: "a longer grace makes a soft limit no limit at all",
		Help: "how long a tree may stay over a soft limit before admission denies (on XFS the kernel's grace timer, which then refuses writes)"},
	{Key: "scratch_ttl", Kind: Duration, Default: "24h", Help: "scratch of a finished run is removed after this"},
	{Key: "inbound_ttl", Kind: Duration, Default: "24h",
		ZeroOff: "a sweep would delete whatever a channel staged in inbound/ as soon as busy_grace passes, processed or not",
		Help:    "a top-level entry of inbound/ (channel staging) that nothing has modified for this long is removed by the sweep: a channel that never processed it left it behind"},
	{Key: "plan_max_age", Kind: Duration, Default: "1h",
		Min: time.Minute, MinWhy: "a saved plan must live long enough to be reviewed",
		Max: 7 * 24 * time.Hour, MaxWhy: "an older plan describes trees that have long changed",
		Help: "a saved sweep plan made longer ago than this is refused when applied"},
	{Key: "refresh_window", Kind: Duration, Default: "60s",
		Min: time.Second, MinWhy: "every reader's ?refresh=1 would walk the trees again, keeping the disk busy for nothing",
		Max: time.Hour, MaxWhy: "a refresh that old is no refresh (snapshot_interval walks every tree anyway)",
		Help: "the server: a ?refresh=1 of the overview within this long of the last one of the same scope shares its walk instead of walking again"},
	{Key: "snapshot_retention", Kind: Duration, Default: "35d", Min: 8 * 24 * time.Hour,
		MinWhy: "report's growth_7d_bytes needs a snapshot 7 days old, and an hourly pass a day of slack",
		Help:   "snapshot totals older than this are dropped (growth is computed from them)"},
	{Key: "journal_retention", Kind: Duration, Default: "0", ZeroMeans: "the whole journal is kept",
		Min: 7 * 24 * time.Hour, MinWhy: "a week of sweeps, deletions and changes stays to be reviewed",
		Help: "the server: after each scheduled snapshot pass, this host's journal records older than this are pruned, 500 a transaction, never a pending deletion's (one journal.pruned event a run); 0 keeps the whole journal"},
	{Key: "snapshot_interval", Kind: Duration, Default: "1h",
		Min: time.Minute, MinWhy: "each pass walks every tree; back to back they would keep the disk busy for nothing",
		Max: 24 * time.Hour, MaxWhy: "report's growth_24h needs a snapshot a day",
		Help: "the server: how often the scheduled snapshot pass walks every tree (one storage.snapshot event a pass)"},
	{Key: "sweep_interval", Kind: Duration, Default: "0", ZeroMeans: "no scheduled sweeps",
		Min: time.Minute, MinWhy: "each pass plans every project; back to back they would keep the disk busy for nothing",
		Help: "the server: how often the scheduled sweep pass sweeps every project, and the root's inbound tree, by policy (one storage.swept event a pass); 0 for never"},
	{Key: "fleet_heartbeat_interval", Kind: Duration, Default: "30s",
		Min: time.Second, MinWhy: "every host writes one row a beat; faster only loads the shared store",
		Max: 10 * time.Minute, MaxWhy: "a host silent that long cannot be told from a dead one",
		Help: "the server: how often this host records its heartbeat in the store (last seen, version, backend, root, projects) for the fleet view"},
	{Key: "fleet_stale_after", Kind: Duration, Default: "2m",
		Min: 2 * time.Second, MinWhy: "a host beating every second would flap between fresh and stale",
		Max: 24 * time.Hour, MaxWhy: "a host silent for a day is stale whatever the setting",
		Help: "fleet view: a host not seen for this long (or for twice its own heartbeat interval, if longer) is shown stale"},
	{Key: "holder_heartbeat", Kind: Duration, Default: "30s",
		Min: time.Second, MinWhy: "each process renews its lease in the store this often; faster only loads the store",
		Max: 10 * time.Minute, MaxWhy: "holder_expiry must exceed it several times over",
		Help: "how often a process holding a sweep lock, a pass, an add or a removal renews its lease in the store (also when the store is shared by hosts)"},
	{Key: "holder_expiry", Kind: Duration, Default: "2m",
		Min: 3 * time.Second, MinWhy: "a lease must outlive a few heartbeats, or a live holder is taken for gone",
		Max: 24 * time.Hour, MaxWhy: "a holder that died would block its project that long",
		Help: "a holder on another machine (or in another container) whose lease was not renewed for this long is gone: its sweep lock, pass, add or removal is taken over (journalled); kept at 3 heartbeats or more"},
	{Key: "health_disk_free_warn_percent", Kind: Percent, Default: "15",
		Help: "health: a filesystem of the root with less space or inodes available than this is warn"},
	{Key: "health_disk_free_critical_percent", Kind: Percent, Default: "5",
		Help: "health: below this it is critical (the health check fails)"},
	{Key: "health_memory_available_warn_percent", Kind: Percent, Default: "10",
		Help: "health: less memory available than this is warn"},
	{Key: "health_memory_available_critical_percent", Kind: Percent, Default: "5",
		Help: "health: below this it is critical"},
	{Key: "health_load_per_core_warn", Kind: Number, Default: "2",
		Help: "health: a 5-minute load average per core at or above this is warn"},
	{Key: "health_load_per_core_critical", Kind: Number, Default: "4",
		Help: "health: at or above this it is critical"},
	{Key: "health_docker_cache_ttl", Kind: Duration, Default: "60s", Min: time.Second,
		MinWhy: "docker system df is expensive for the daemon; asking it more often than every second only loads it",
		Help:   "health: how long the answer of docker system df (images, build cache and volume bytes) is reused"},
}

// Lookup finds a setting by key.
func Lookup(key string) (Setting, error) {
	for _, s := range All {
		if s.Key == key {
			return s, nil
		}
	}
	keys := make([]string, len(All))
	for i, s := range All {
		keys[i] = s.Key
	}
	return Setting{}, fmt.Errorf("unknown setting %q; known settings: %s", key, strings.Join(keys, ", "))
}

// AllowZero is the input by which an operator says a zero that switches
// a safety rail off is meant, by the library's name (each shell words it).
const AllowZero = "allow_zero"

// Normalize validates value for the setting and returns it in canonical
// form; a zero that switches a safety rail off is refused.
func (s Setting) Normalize(value string) (string, error) {
	return s.NormalizeExplicit(value, false)
}

// NormalizeExplicit is Normalize; allowZero accepts a zero that switches
// a safety rail off, because the operator said so.
func (s Setting) NormalizeExplicit(value string, allowZero bool) (string, error) {
	norm, err := s.normalize(value)
	if err == nil && s.ZeroOff != "" && !allowZero && (norm == "0" || norm == "0s") {
		return "", errkind.WithFieldHint(errkind.Input, fmt.Errorf("%s: %s switches a safety rail off (%s)", s.Key, strings.TrimSpace(value), s.ZeroOff),
			"if that is meant, say so with %s", AllowZero)
	}
	return norm, err
}

func (s Setting) normalize(value string) (string, error) {
	value = strings.TrimSpace(value)
	switch s.Kind {
	case Size:
		n, err := units.ParseSize(value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Key, err)
		}
		return fmt.Sprint(n), nil
	case Duration:
		d, err := units.ParseDuration(value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Key, err)
		}
		if d < s.Min && !(d == 0 && s.ZeroMeans != "") {
			return "", fmt.Errorf("%s: %s is too short: use at least %s (%s)", s.Key, value, units.FormatDuration(s.Min), s.MinWhy)
		}
		if s.Max > 0 && d > s.Max {
			return "", fmt.Errorf("%s: %s is too long: use at most %s (%s)", s.Key, value, units.FormatDuration(s.Max), s.MaxWhy)
		}
		return units.FormatDuration(d), nil
	case Globs:
		var globs []string
		for g := range strings.SplitSeq(value, ",") {
			g = strings.TrimSpace(g)
			if g == "" {
				continue
			}
			if _, err := path.Match(strings.TrimSuffix(g, "/"), "x"); err != nil || strings.Contains(g, "..") || strings.HasPrefix(g, "/") {
				return "", fmt.Errorf("%s: %q is not a valid glob: use shell patterns relative to the workspace, e.g. *.log or dist/", s.Key, g)
			}
			globs = append(globs, g)
		}
		if len(globs) == 0 {
			return "", fmt.Errorf("%s: give at least one glob, e.g. *.tmp,dist/", s.Key)
		}
		return strings.Join(slices.Compact(globs), ","), nil
	case Percent, Number:
		f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(value, "%")), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (s.Kind == Percent && f > 100) {
			if s.Kind == Percent {
				return "", fmt.Errorf("%s: %q is not a percentage: use a number from 0 to 100, e.g. 15 or 7.5%%", s.Key, value)
			}
			return "", fmt.Errorf("%s: %q is not a non-negative number: use e.g. 2 or 1.5", s.Key, value)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("%s: unknown kind %s", s.Key, s.Kind)
}

// Value is a setting's effective value and where it came from.
type Value struct {
	Setting
	Value  string `json:"value"`
	Source string `json:"source"` // "stored", "env KEY" or "default"
	// Problem is why no value applies (a bad environment value), as a
	// listing shows it instead of failing; "" when the value is good.
	Problem string `json:"problem,omitempty"`
}

// Resolve picks the effective value: stored, else the environment, else the
// default. A bad environment value is an error, not silently ignored.
func Resolve(s Setting, stored string, isStored bool) (Value, error) {
	if isStored {
		return Value{Setting: s, Value: stored, Source: "stored"}, nil
	}
	if s.Env != "" {
		if env := os.Getenv(s.Env); env != "" {
			// An environment variable cannot say a zero is meant: refused.
			v, err := s.Normalize(env)
			if err != nil && s.ZeroOff != "" {
				if norm, nerr := s.normalize(env); nerr == nil && (norm == "0" || norm == "0s") {
					return Value{}, fmt.Errorf("environment %s=%s: %s; unset it for the default (%s) or give a nonzero value", s.Env, env, s.ZeroOff, s.Default)
				}
			}
			if err != nil {
				return Value{}, fmt.Errorf("environment %s: %w", s.Env, err)
			}
			return Value{Setting: s, Value: v, Source: "env " + s.Env}, nil
		}
	}
	v, err := s.Normalize(s.Default)
	return Value{Setting: s, Value: v, Source: "default"}, err
}

// Bytes reads a size setting's value.
func (v Value) Bytes() uint64 {
	n, _ := units.ParseSize(v.Value)
	return n
}

// Float reads a percent or number setting's value.
func (v Value) Float() float64 {
	f, _ := strconv.ParseFloat(v.Value, 64)
	return f
}

// Duration reads a duration setting's value.
func (v Value) Duration() time.Duration {
	d, _ := units.ParseDuration(v.Value)
	return d
}
