package apiv1

// SettingKind is how a setting's value reads.
type SettingKind string

const (
	SettingSize     SettingKind = "size"
	SettingDuration SettingKind = "duration"
	SettingGlobs    SettingKind = "globs"
	SettingPercent  SettingKind = "percent"
	SettingNumber   SettingKind = "number"
)

// Setting is one installation setting with its value in force
// (GET /v1/settings, GET /v1/settings/{key}), as xfsq settings list shows it.
type Setting struct {
	Key     string      `json:"key"`
	Kind    SettingKind `json:"kind"`
	Default string      `json:"default"`
	Help    string      `json:"help"`
	// Env is the environment variable read when the setting was never stored.
	Env    string `json:"env,omitempty"`
	Value  string `json:"value"`
	Source string `json:"source"` // "stored", "env KEY" or "default"
	// Problem is why no value applies (a bad environment value).
	Problem string `json:"problem,omitempty"`
}

// SetSettingRequest is the body of PUT /v1/settings/{key}.
type SetSettingRequest struct {
	Value string `json:"value"`
	// AllowZero stores a zero that switches a safety rail off (busy_grace,
	// reservation_ttl, default_quota), which is otherwise refused.
	AllowZero bool `json:"allow_zero,omitempty"`
}

// SettingChange is what PUT or DELETE /v1/settings/{key} did: the value in
// force now, and the one before ("VALUE from SOURCE"). Journalled as
// settings.changed.
type SettingChange struct {
	Setting
	Was string `json:"was"`
}

// Finding is one drift doctor found between the store, the directories
// and the kernel, and its repair.
type Finding struct {
	Kind      string `json:"kind"`
	Project   string `json:"project,omitempty"`
	Area      string `json:"area,omitempty"`
	Path      string `json:"path,omitempty"`
	ProjectID uint32 `json:"project_id,omitempty"`
	Detail    string `json:"detail"`
	// Fix is what the repair does (or did), or what to do by hand.
	Fix   string `json:"fix"`
	Fixed bool   `json:"fixed"`
	Error string `json:"error,omitempty"` // a repair that failed
}

// Doctor is GET /v1/system/doctor (the findings) and POST
// /v1/system/doctor/fix (the findings with each repair's outcome).
type Doctor struct {
	Findings []Finding `json:"findings"`
	// Unresolved: drift remains (xfsq doctor's exit 1).
	Unresolved bool `json:"unresolved"`
}
