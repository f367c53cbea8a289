package sandbox

// The core's API as shells call it: its types by alias, and each function
// and method a one-line call into sandbox/internal/core or the use case
// beside it that owns the call (retention: sweeps, plans, passes;
// readmodel: the answers assembled for readers; doctor: findings and
// repairs; fleet: heartbeats, the hosts sharing the store, retirement;
// writes: the accounting of writes, and the file layer over it).
// Nothing here decides anything; a new use case adds its line here.

import (
	"context"
	"path/filepath"
	"time"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/core/diskfull"
	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/sandbox/internal/doctor"
	"github.com/xfsq/xfsq/sandbox/internal/fleet"
	"github.com/xfsq/xfsq/sandbox/internal/healthsources"
	"github.com/xfsq/xfsq/sandbox/internal/lifecycle"
	"github.com/xfsq/xfsq/sandbox/internal/readmodel"
	"github.com/xfsq/xfsq/sandbox/internal/retention"
	"github.com/xfsq/xfsq/sandbox/internal/writes"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// The core's types, as shells name them.
type (
	AddOptions      = lifecycle.AddOptions
	Admission       = readmodel.Admission
	Backend         = core.Backend
	Config          = core.Config
	Deletion        = readmodel.Deletion
	DiskFullError   = diskfull.Error
	Event           = readmodel.Event
	EventPage       = readmodel.EventPage
	EventQuery      = readmodel.EventQuery
	FullDisk        = core.FullDisk
	Growth          = readmodel.Growth
	HealthSources   = healthsources.HealthSources
	HeldProject     = retention.HeldProject
	IDRange         = core.IDRange
	InitResult      = core.InitResult
	InputError      = core.InputError
	JournalBuckets  = store.JournalBuckets
	JournalCursor   = readmodel.JournalCursor
	JournalNews     = readmodel.JournalNews
	KeptPlan        = retention.KeptPlan
	LeaseHeldError  = lifecycle.LeaseHeldError
	LeaseStatus     = lifecycle.LeaseStatus
	LimitChange     = core.LimitChange
	LimitWarning    = core.LimitWarning
	NotReadyError   = healthsources.NotReadyError
	Options         = core.Options
	Overview        = readmodel.Overview
	OverviewDisk    = readmodel.OverviewDisk
	OverviewOptions = readmodel.OverviewOptions
	OverviewSummary = readmodel.OverviewSummary
	PassOutcome     = retention.PassOutcome
	PlanRef         = retention.PlanRef
	Project         = core.Project
	ProjectOverview = readmodel.ProjectOverview
	ProjectRecord   = core.ProjectRecord
	ProjectStorage  = readmodel.ProjectStorage
	PurgePlan       = lifecycle.PurgePlan
	Purged          = lifecycle.Purged
	Read            = core.Read
	RemoveOptions   = lifecycle.RemoveOptions
	RemoveResult    = lifecycle.RemoveResult
	Replaced        = writes.Replaced
	SavedPlan       = retention.SavedPlan
	SnapshotOptions = core.SnapshotOptions
	SweepBusyError  = retention.SweepBusyError
	SweepOptions    = retention.SweepOptions
	SweepOutcome    = retention.SweepOutcome
	SweepRun        = readmodel.SweepRun
	TopPath         = readmodel.TopPath
	Tree            = core.Tree
	TreeProgress    = core.TreeProgress
	TreeSnapshot    = core.TreeSnapshot
	TreeStatus      = core.TreeStatus
	TreeStorage     = readmodel.TreeStorage
	Unowned         = readmodel.Unowned
	WalkRun         = readmodel.WalkRun
	Write           = writes.Write
	WriteLimits     = writes.WriteLimits
	WriteSettings   = core.WriteSettings
	XFSProjects     = readmodel.XFSProjects
)

const (
	BackendAuto           = core.BackendAuto
	BackendExt4           = core.BackendExt4
	BackendFallback       = core.BackendFallback
	BackendXFS            = core.BackendXFS
	CtimeLag              = core.CtimeLag
	DefaultDetailDepth    = readmodel.DefaultDetailDepth
	DefaultOverviewMaxAge = readmodel.DefaultOverviewMaxAge
	Deny                  = core.Deny
	FullDiskReadOnly      = core.FullDiskReadOnly
	FullDiskRefuse        = core.FullDiskRefuse
	FullDiskSpendReserve  = core.FullDiskSpendReserve
	LimitBytes            = core.LimitBytes
	LimitHard             = core.LimitHard
	LimitInodes           = core.LimitInodes
	LimitSoft             = core.LimitSoft
	MaxEventLimit         = readmodel.MaxEventLimit
	MaxLeaseTTL           = lifecycle.MaxLeaseTTL
	NameRule              = core.NameRule
	Ok                    = core.Ok
	PassSnapshot          = retention.PassSnapshot
	PassSweep             = retention.PassSweep
	PlanFormat            = retention.PlanFormat
	RootOwner             = core.RootOwner
	RunRule               = lifecycle.RunRule
	SnapshotInterval      = core.SnapshotInterval
	StateDir              = core.StateDir
	TempPrefix            = core.TempPrefix
	Warn                  = core.Warn
)

var (
	AddFaultPoints    = lifecycle.AddFaultPoints
	ErrExists         = core.ErrExists
	ErrNotFound       = core.ErrNotFound
	Passes            = retention.Passes
	RemoveFaultPoints = lifecycle.RemoveFaultPoints
)

func ActorFrom(ctx context.Context) string {
	return core.ActorFrom(ctx)
}

func BeginOp(ctx context.Context) (context.Context, func()) {
	return core.BeginOp(ctx)
}

func CheckRoot(root string) error {
	return core.CheckRoot(root)
}

func DefaultActor() string {
	return core.DefaultActor()
}

func DeletionOf(ev Event) (key string, pending bool, ok bool) {
	return readmodel.DeletionOf(ev)
}

func DiskFull(dir string, need uint64, err error) *DiskFullError {
	return diskfull.Check(dir, need, err)
}

func EnsureReserve(root string) {
	diskfull.EnsureReserve(filepath.Join(root, core.StateDir))
}

func Exceeded(t TreeStatus, now time.Time) bool {
	return core.Exceeded(t, now)
}

func ExplainDiskFull(root string, err error) error {
	return diskfull.Explain(root, err)
}

func HolderOf(ctx context.Context) string {
	return core.HolderOf(ctx)
}

func ImpliedProjects(areas []string) []string {
	return core.ImpliedProjects(areas)
}

func LocalDSN(root string) string {
	return core.LocalDSN(root)
}

func OpenHealth(ctx context.Context, cfg Config, budget time.Duration) (*HealthSources, error) {
	return healthsources.OpenHealth(ctx, cfg, budget)
}

func ParseIDRange(s string) (IDRange, error) {
	return core.ParseIDRange(s)
}

func ParseSince(s string, now time.Time) (time.Time, error) {
	return readmodel.ParseSince(s, now)
}

func ReadPlanFile(path string) (PlanRef, error) {
	return retention.ReadPlanFile(path)
}

func ReleaseReserve(root string) bool {
	return diskfull.ReleaseReserve(filepath.Join(root, core.StateDir))
}

func ReservePath(root string) string {
	return diskfull.ReservePath(filepath.Join(root, core.StateDir))
}

func SettingProblems(vals []settings.Value) error {
	return core.SettingProblems(vals)
}

func SettledDeletions(evs []Event) []Event {
	return readmodel.SettledDeletions(evs)
}

func ValidateArea(a string) error {
	return core.ValidateArea(a)
}

func ValidateBackend(choice string) error {
	return core.ValidateBackend(choice)
}

func ValidateName(name string) error {
	return core.ValidateName(name)
}

func ValidateTree(name string, a string) error {
	return core.ValidateTree(name, a)
}

// WithStoreBudget is ctx whose store calls together wait at most d
// (store.WithBudget): a server gives each request one.
func WithStoreBudget(ctx context.Context, d time.Duration) context.Context {
	return store.WithBudget(ctx, d)
}

func WithActor(ctx context.Context, name string) context.Context {
	return core.WithActor(ctx, name)
}

func (m *Manager) AcquireLease(ctx context.Context, name string, run string, ttl time.Duration) (LeaseStatus, error) {
	return m.projects.AcquireLease(ctx, name, run, ttl)
}

func (m *Manager) ActorOf(ctx context.Context) string {
	return m.c.ActorOf(ctx)
}

func (m *Manager) Add(ctx context.Context, name string, o AddOptions) (Project, error) {
	return m.projects.Add(ctx, name, o)
}

func (m *Manager) BackendInfo() Backend {
	return m.c.BackendInfo()
}

func (m *Manager) BackendName() string {
	return m.c.BackendName()
}

func (m *Manager) Check(ctx context.Context, name string, r ...Read) (Admission, error) {
	return m.reads.Check(ctx, name, r...)
}

// AdmissionBackendOnce is a with the backend at its top only, as the API
// answers; AppendAdmissionJSON appends its JSON without reflection, byte
// for byte encoding/json's.
func AdmissionBackendOnce(a Admission) Admission       { return readmodel.AdmissionBackendOnce(a) }
func AppendAdmissionJSON(b []byte, a Admission) []byte { return readmodel.AppendAdmissionJSON(b, a) }

func (m *Manager) Close() error {
	return m.c.Close()
}

func (m *Manager) Events(ctx context.Context, q EventQuery) (EventPage, error) {
	return m.reads.Events(ctx, q)
}

func (m *Manager) ExportXFS(ctx context.Context) (XFSProjects, error) {
	return m.reads.ExportXFS(ctx)
}

func (m *Manager) IsXFS() bool {
	return m.c.IsXFS()
}

func (m *Manager) Leases(ctx context.Context) ([]LeaseStatus, error) {
	return m.projects.Leases(ctx)
}

func (m *Manager) List(ctx context.Context) ([]store.Project, error) {
	return m.c.List(ctx)
}

// SummaryOf is ov's summary (the fullest projects, the top growers) over
// the projects sees keeps (nil: all).
func SummaryOf(ov *Overview, sees func(string) bool) OverviewSummary {
	return readmodel.SummaryOf(ov, sees)
}

// Scoped is ov as a reader limited to the projects sees keeps may see it:
// their lines, and the disk's promise and reclaimable bytes of their trees.
func Scoped(ov *Overview, sees func(string) bool) *Overview { return readmodel.Scoped(ov, sees) }

func (m *Manager) Overview(ctx context.Context, o OverviewOptions) (*Overview, error) {
	return m.reads.Overview(ctx, o)
}

func (m *Manager) Policy(ctx context.Context) (sweep.Policy, error) {
	return m.sweeps.Policy(ctx)
}

func (m *Manager) ProjectLeases(ctx context.Context, name string) ([]LeaseStatus, error) {
	return m.projects.ProjectLeases(ctx, name)
}

func (m *Manager) ProjectStorage(ctx context.Context, name string, depth int) (ProjectStorage, error) {
	return m.reads.ProjectStorage(ctx, name, depth)
}

func (m *Manager) ReadJournal(ctx context.Context, c *JournalCursor) (JournalNews, error) {
	return m.reads.ReadJournal(ctx, c)
}

func (m *Manager) CheckpointJournal(ctx context.Context, buckets JournalBuckets) (bool, error) {
	return m.reads.CheckpointJournal(ctx, buckets)
}

func (m *Manager) Ready(ctx context.Context, timeout time.Duration) error {
	return healthsources.Ready(ctx, healthsources.Readiness{Root: m.c.Root, Backend: m.c.Backend, XFS: m.c.IsXFS(), Store: m.c.Store}, timeout)
}

func (m *Manager) RefreshBaselineIfStale(ctx context.Context, t store.Tree) error {
	return m.c.RefreshBaselineIfStale(ctx, t)
}

func (m *Manager) RefreshShared(ctx context.Context, name string) error {
	return m.reads.RefreshShared(ctx, name)
}

func (m *Manager) ReleaseLease(ctx context.Context, name string, run string) error {
	return m.projects.ReleaseLease(ctx, name, run)
}

func (m *Manager) Remove(ctx context.Context, name string, o RemoveOptions) (RemoveResult, error) {
	return m.projects.Remove(ctx, name, o)
}

func (m *Manager) Report(ctx context.Context, r ...Read) ([]TreeStatus, error) {
	return m.c.Report(ctx, r...)
}

func (m *Manager) ResetSetting(ctx context.Context, key string) (v settings.Value, old string, err error) {
	return m.settings.ResetSetting(ctx, key)
}

func (m *Manager) RunPass(ctx context.Context, pass string) (PassOutcome, error) {
	return m.sweeps.RunPass(ctx, pass)
}

func (m *Manager) Set(ctx context.Context, name string, a string, change LimitChange) (Project, error) {
	return m.c.Set(ctx, name, a, change)
}

func (m *Manager) SetSetting(ctx context.Context, key string, value string) (settings.Value, string, error) {
	return m.settings.SetSetting(ctx, key, value)
}

func (m *Manager) SetSettingExplicit(ctx context.Context, key string, value string, allowZero bool) (settings.Value, string, error) {
	return m.settings.SetSettingExplicit(ctx, key, value, allowZero)
}

func (m *Manager) Setting(ctx context.Context, key string) (settings.Value, error) {
	return m.c.Setting(ctx, key)
}

func (m *Manager) Settings(ctx context.Context) ([]settings.Value, error) {
	return m.c.Settings(ctx)
}

func (m *Manager) SettleInterrupted(ctx context.Context) (int, error) {
	return m.c.SettleInterrupted(ctx)
}

func (m *Manager) Show(ctx context.Context, name string, r ...Read) (Project, error) {
	return m.c.Show(ctx, name, r...)
}

func (m *Manager) Snapshot(ctx context.Context, o SnapshotOptions) ([]TreeSnapshot, error) {
	return m.snaps.Snapshot(ctx, o)
}

func (m *Manager) Sweep(ctx context.Context, o SweepOptions) (SweepOutcome, error) {
	return m.sweeps.Sweep(ctx, o)
}

func (m *Manager) Top(ctx context.Context, name string, area string, opts inventory.Options) (*inventory.Result, error) {
	return m.snaps.Top(ctx, name, area, opts)
}

func (m *Manager) Tree(ctx context.Context, name string, a string) (store.Tree, error) {
	return m.c.Tree(ctx, name, a)
}

func (m *Manager) Unowned(ctx context.Context) (u Unowned, ok bool, err error) {
	return m.reads.Unowned(ctx)
}

func (m *Manager) Usage(ctx context.Context) ([]TreeStatus, error) {
	return m.c.Usage(ctx)
}

func (m *Manager) Warm(ctx context.Context) (*Overview, error) {
	return m.reads.Warm(ctx)
}

func (m *Manager) WriteSettings(ctx context.Context) (WriteSettings, error) {
	return m.c.WriteSettings(ctx)
}

func (m *Manager) WriteXFSProjectFiles(ctx context.Context, projectsPath string, projidPath string) (XFSProjects, error) {
	return m.reads.WriteXFSProjectFiles(ctx, projectsPath, projidPath)
}

// The fleet: heartbeats, the hosts sharing the store, their trees, retirement.
type (
	AbandonedDeletion = fleet.AbandonedDeletion
	FleetHost         = fleet.FleetHost
	FleetHosts        = fleet.FleetHosts
	FleetQuery        = fleet.FleetQuery
	FleetStorage      = fleet.FleetStorage
	FleetTree         = fleet.FleetTree
	RetireOutcome     = fleet.RetireOutcome
)

func Version() string { return fleet.Version() }

func (m *Manager) HeartbeatInterval(ctx context.Context) (time.Duration, error) {
	return m.fleet.HeartbeatInterval(ctx)
}

func (m *Manager) Heartbeat(ctx context.Context, interval time.Duration) error {
	return m.fleet.Heartbeat(ctx, interval)
}

func (m *Manager) FleetHosts(ctx context.Context) (FleetHosts, error) { return m.fleet.FleetHosts(ctx) }

func (m *Manager) FleetStorage(ctx context.Context, q FleetQuery) (FleetStorage, error) {
	return m.fleet.FleetStorage(ctx, q)
}

func (m *Manager) CheckHosts(ctx context.Context, names []string) error {
	return m.c.CheckHosts(ctx, names)
}

func (m *Manager) RetireHost(ctx context.Context, name string, force bool) (RetireOutcome, error) {
	return m.fleet.RetireHost(ctx, name, force)
}

func (m *Manager) RootID() string { return m.c.RootID() }

// The report with its filters, as both shells take them.
type (
	ReportOptions = readmodel.ReportOptions
	ReportPromise = readmodel.ReportPromise
	ReportResult  = readmodel.ReportResult
	TreeWarning   = readmodel.TreeWarning
)

const (
	ReportByProject = readmodel.ReportByProject
	ReportByUsed    = readmodel.ReportByUsed
	ReportByPercent = readmodel.ReportByPercent
	ReportByGrowth  = readmodel.ReportByGrowth
	WarnStale       = readmodel.WarnStale
	WarnDrift       = readmodel.WarnDrift
	WarnEscape      = readmodel.WarnEscape
)

var ReportSorts = readmodel.ReportSorts

func CheckReport(o ReportOptions) error { return readmodel.CheckReport(o) }

// ReportBackendOnce is r with the backend at its top only, as the API answers.
func ReportBackendOnce(r ReportResult) ReportResult { return readmodel.ReportBackendOnce(r) }

func AtHardLimit(t TreeStatus) bool   { return readmodel.AtHardLimit(t) }
func OverSoftLimit(t TreeStatus) bool { return readmodel.OverSoftLimit(t) }

func (m *Manager) ReportOf(ctx context.Context, o ReportOptions) (ReportResult, error) {
	return m.reads.ReportOf(ctx, o)
}

// Insight: what changed in a tree, when it will be full, what the policies
// would free, and what the limits promise of the disk.
type (
	DiffOptions = readmodel.DiffOptions
	PathChange  = readmodel.PathChange
	Promised    = readmodel.Promised
	Trend       = trend.Trend
	TreeDiff    = readmodel.TreeDiff
	TreeKey     = core.TreeKey
	TreeTrend   = readmodel.TreeTrend
	UsagePoint  = trend.Point
)

const (
	DefaultDiffSince = readmodel.DefaultDiffSince
	DefaultDiffTop   = readmodel.DefaultDiffTop
	MaxDiffTop       = readmodel.MaxDiffTop
	TrendWindow      = trend.Window
	TrendMinPoints   = trend.MinPoints
	TrendMinSpan     = trend.MinSpan
)

func FullIn(points []UsagePoint, limit uint64, now time.Time) Trend {
	return trend.FullIn(points, limit, now)
}

func (m *Manager) Diff(ctx context.Context, name string, o DiffOptions) (TreeDiff, error) {
	return m.reads.Diff(ctx, name, o)
}

func (m *Manager) FullAt(ctx context.Context) map[TreeKey]time.Time { return m.reads.FullAt(ctx) }

// Usage history: a project's and the disk's stored figures over the
// snapshot window, for charts.
type (
	DiskHistory    = readmodel.DiskHistory
	HistoryOptions = readmodel.HistoryOptions
	HistoryPoint   = readmodel.HistoryPoint
	ProjectHistory = readmodel.ProjectHistory
	TreeHistory    = readmodel.TreeHistory
)

const (
	DefaultHistoryPoints = readmodel.DefaultHistoryPoints
	MaxHistoryPoints     = readmodel.MaxHistoryPoints
)

func (m *Manager) ProjectHistory(ctx context.Context, name string, o HistoryOptions) (ProjectHistory, error) {
	return m.reads.ProjectHistory(ctx, name, o)
}

func (m *Manager) DiskHistory(ctx context.Context, o HistoryOptions) (DiskHistory, error) {
	return m.reads.DiskHistory(ctx, o)
}

func (m *Manager) ProjectTrends(ctx context.Context, name string) ([]TreeTrend, error) {
	return m.reads.ProjectTrends(ctx, name)
}

const (
	ReportByFiles       = readmodel.ReportByFiles
	ReportByActivity    = readmodel.ReportByActivity
	ReportByFullIn      = readmodel.ReportByFullIn
	ReportByReclaimable = readmodel.ReportByReclaimable
)

// ---- doctor (sandbox/internal/doctor): findings of drift and their repair ----

type (
	DoctorResult = doctor.Result
	Finding      = doctor.Finding
)

const (
	BusyProject         = doctor.BusyProject
	DeadReservation     = doctor.DeadReservation
	ForeignKernelID     = doctor.ForeignKernelID
	GraceDrift          = doctor.GraceDrift
	InterruptedAdd      = doctor.InterruptedAdd
	InterruptedDeletion = doctor.InterruptedDeletion
	InterruptedRemove   = doctor.InterruptedRemove
	KeptID              = doctor.KeptID
	LimitsDrift         = doctor.LimitsDrift
	MissingDirectory    = doctor.MissingDirectory
	MissingTree         = doctor.MissingTree
	MountedTree         = doctor.MountedTree
	OrphanKernelID      = doctor.OrphanKernelID
	QuotaEscape         = doctor.QuotaEscape
	StrayTemp           = doctor.StrayTemp
	UnmanagedDir        = doctor.UnmanagedDir
	WriteInProgress     = doctor.WriteInProgress
	WrongProjectID      = doctor.WrongProjectID
)

func Unresolved(findings []Finding) bool { return doctor.Unresolved(findings) }

func (m *Manager) Doctor(ctx context.Context, fix bool) ([]Finding, error) {
	return m.doctor.Run(ctx, fix)
}

func (m *Manager) DoctorReport(ctx context.Context, fix bool) (DoctorResult, error) {
	return m.doctor.Report(ctx, fix)
}

// ---- end doctor ----
