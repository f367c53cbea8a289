package cliargs

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/sandbox"
)

// RefreshFlag asks a read for fresh figures: without it a read never walks.
func RefreshFlag() cli.Flag {
	return &cli.BoolFlag{Name: "refresh", Usage: "on the fallback backend, walk the trees now rather than read their last walk"}
}

// ReadFlags is the read RefreshFlag asks for.
func ReadFlags(c *cli.Context) sandbox.Read { return sandbox.Read{Refresh: c.Bool("refresh")} }

// AreaUsage names the areas a flag takes.
var AreaUsage = strings.Join(area.All, ", ") + " (inbound: the root's own tree, PROJECT " + sandbox.RootOwner + ")"

// AreaFlag is --area, one area, the workspace unless given.
func AreaFlag() cli.Flag {
	return &cli.StringFlag{Name: "area", Value: area.Workspace, Usage: AreaUsage}
}
