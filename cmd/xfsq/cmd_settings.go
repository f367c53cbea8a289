package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliwords"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/units"
)

func settingsCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "settings",
		Usage: "installation settings (retention policies, default quotas)",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "every setting with its value and where it comes from", Action: with(reads(cmdSettingsList))},
			{Name: "get", Usage: "one setting's value", ArgsUsage: "KEY", Action: with(reads(cmdSettingsGet))},
			{Name: "reset", Usage: "forget a stored setting: the environment or the default applies again", ArgsUsage: "KEY",
				Action: with(cmdSettingsReset)},
			{Name: "set", Usage: "change a setting (validated)", ArgsUsage: "KEY VALUE", Action: with(cmdSettingsSet),
				Description: "A zero that switches a safety rail off (busy_grace, reservation_ttl, default_quota) is refused\n" +
					"unless " + cliwords.FlagOf(settings.AllowZero) + " says it is meant.",
				Flags: []cli.Flag{&cli.BoolFlag{Name: strings.TrimPrefix(cliwords.FlagOf(settings.AllowZero), "--"), Usage: "accept a zero that switches a safety rail off"}}},
		},
	}
}

func cmdSettingsList(e env) error {
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		vals, err := m.Settings(ctx)
		if err != nil {
			return err
		}
		if err := e.print(vals, func(w io.Writer) {
			rows := make([][]string, len(vals))
			for i, v := range vals {
				value := humanSetting(v)
				if v.Problem != "" {
					value = "(refused: see below)"
				}
				rows[i] = []string{v.Key, value, v.Source, v.Help}
			}
			textout.Table(w, "KEY\tVALUE\tSOURCE\tMEANING", rows)
		}); err != nil {
			return err
		}
		// Every other setting is listed; the bad one fails the command (2).
		return sandbox.SettingProblems(vals)
	})
}

func cmdSettingsReset(e env) error {
	key, err := cliargs.OneArg(e.c, "KEY")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		v, old, err := m.ResetSetting(ctx, key)
		if err != nil {
			return err
		}
		return e.print(v, func(w io.Writer) {
			fmt.Fprintf(w, "%s = %s from %s (was %s)\n", v.Key, humanSetting(v), v.Source, old)
		})
	})
}

func humanSetting(v settings.Value) string {
	switch v.Kind {
	case settings.Size:
		return units.FormatIEC(v.Bytes())
	case settings.Duration:
		// One unit system whatever was stored (older stores hold "2h0m0s").
		return units.FormatDuration(v.Duration())
	}
	return v.Value
}

func cmdSettingsGet(e env) error {
	key, err := cliargs.OneArg(e.c, "KEY")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		v, err := m.Setting(ctx, key)
		if err != nil {
			return err
		}
		return e.print(v, func(w io.Writer) { fmt.Fprintln(w, humanSetting(v)) })
	})
}

func cmdSettingsSet(e env) error {
	if e.c.NArg() != 2 {
		return cliargs.Usagef("settings set takes KEY VALUE, got %d arguments: see xfsq settings set --help", e.c.NArg())
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		v, old, err := m.SetSettingExplicit(ctx, e.c.Args().Get(0), e.c.Args().Get(1), e.c.Bool("allow-zero"))
		if err != nil {
			return err
		}
		return e.print(v, func(w io.Writer) {
			// old is "VALUE from SOURCE": the value in the form settings list prints.
			if val, src, ok := strings.Cut(old, " from "); ok {
				old = settingText(v.Key, val) + " from " + src
			}
			fmt.Fprintf(w, "%s = %s (was %s)\n", v.Key, humanSetting(v), textout.Line(old))
		})
	})
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
