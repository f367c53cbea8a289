package core

import "context"

type actorKey struct{}

// WithActor says who asks for the operations run with ctx: the CLI's OS
// user, or an API token's name. It is journalled with every change they
// make, so one long-lived Manager serves many callers under their own names.
func WithActor(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, actorKey{}, name)
}

// ActorFrom is the actor WithActor put in ctx, and "" when none.
func ActorFrom(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// ActorOf is who is journalled for a change made with ctx: the context's
// actor, else the Manager's default (Options.Actor, else the OS user).
func (m *Manager) ActorOf(ctx context.Context) string {
	if a := ActorFrom(ctx); a != "" {
		return a
	}
	return m.Actor
}

func (m *Manager) actor(ctx context.Context) string { return m.ActorOf(ctx) }
