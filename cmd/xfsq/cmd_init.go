package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/sandbox"
)

func initCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create the sandbox root's layout, detect the quota backend, migrate the store (idempotent)",
		Description: "Creates projects/ cache/ scratch/ inbound/ and .xfsq/ under the root, detects XFS with\n" +
			"project quotas (else the fallback backend, with the reason), and creates or migrates the store.\n" +
			"--backend xfs fails (exit 1, with the reason and the fix) unless the kernel enforces XFS project\n" +
			"quotas on the root; the choice is recorded, and every later command fails the same way if they go.\n" +
			"--backend fallback uses application-level quotas even on XFS. Without --backend, init keeps the\n" +
			"recorded choice (auto the first time).\n\n" +
			"Init binds the host name (--host, default the OS hostname) to this root in the store: its identity\n" +
			"(a random id in .xfsq/root-id) and its filesystem's. Every later command on the root under another\n" +
			"host name is refused, and so is another root under this one. When a root replaces one that is gone\n" +
			"for good (a rebuilt machine), --take-over-host gives it the old root's host name and records (journalled\n" +
			"as root.bound). With PostgreSQL, give --host explicitly: init notes when the hostname was taken.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Usage: "auto (the kernel's project quotas where it enforces them, on XFS or ext4, else the fallback), xfs, ext4 or fallback"},
			&cli.BoolFlag{Name: "take-over-host", Usage: "bind the host name to this root although another root holds it (that root is gone for good; journalled)"},
		},
		Action: with(cmdInit),
	}
}

func cmdInit(e env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	cfg.Init = true
	cfg.Backend = e.c.String("backend")
	cfg.TakeOverHost = e.c.Bool("take-over-host")
	r, err := sandbox.OpenRoot(e.c.Context, cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	res := *r.Init
	return e.print(res, func(w io.Writer) {
		fmt.Fprintf(w, "root:    %s\nbackend: %s\n", res.Root, r.Manager.BackendName())
		if res.Backend.Reason != "" {
			fmt.Fprintf(w, "         %s\n", res.Backend.Reason)
		}
		for _, n := range res.Notes {
			fmt.Fprintf(w, "note:    %s\n", n)
		}
		fmt.Fprintf(w, "store:   %s\n", res.Store)
		if len(res.Created) > 0 {
			fmt.Fprintf(w, "created: %s\n", strings.Join(res.Created, " "))
		} else {
			fmt.Fprintln(w, "created: nothing (already initialised)")
		}
	})
}
