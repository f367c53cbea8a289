package cliargs

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/units"
)

// slipBelow is the byte limit under which a bare number is taken for a
// slip: --bytes-hard 10 meant 10g far more often than ten bytes, and a
// tree limited to ten bytes refuses its next write.
const slipBelow = 1 << 20

// ForceFlag lets a bare byte count under 1 MiB through as it is.
func ForceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "take a bare byte limit under 1 MiB as it is (--bytes-hard 10 is 10 bytes)"}
}

// CheckBareBytes refuses a byte limit given as a bare number (no unit)
// under slipBelow, but 0 (no limit), unless --force says it is meant.
func CheckBareBytes(c *cli.Context, name string) error {
	v := strings.TrimSpace(c.String(name))
	if v == "" || strings.TrimLeft(v, "0123456789") != "" || c.Bool("force") {
		return nil
	}
	n, err := units.ParseSize(v)
	if err != nil || n == 0 || n >= slipBelow {
		return nil
	}
	return Usagef("--%s %s: a bare number is bytes, and %s is surely a slip (for %sg? %sm?): give a unit (%sg, %sMiB), "+
		"or --force to limit the tree to %s bytes", name, v, units.FormatIEC(n), v, v, v, v, v)
}
