// Package fault lets tests kill a process at a named point, to show that an
// interrupted operation leaves nothing half-done behind.
//
// It does nothing at all unless built with the build tag xfsqfault (the
// tests of cmd/xfsq build their binary so): a shipped binary must not die
// because an environment variable said so. Even then it acts only when
// XFSQ_FAULT names the point exactly.
package fault

// Env names the variable that selects the point to die at.
const Env = "XFSQ_FAULT"

// Tag is the build tag that arms Point.
const Tag = "xfsqfault"

// ActionEnv, set to "stop", makes the point stop the process (SIGSTOP)
// instead of killing it: the test sees it paused exactly there and kills
// it from outside, as an operator's kill -9 or the OOM killer would.
const ActionEnv = "XFSQ_FAULT_ACTION"
