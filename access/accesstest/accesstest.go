// Package accesstest gives tests a source of users' permission strings
// without a database.
package accesstest

import (
	"context"

	"github.com/blindexec/blindexec/access"
)

// Same is a source granting every user the same permission strings.
func Same(perms ...string) access.Source { return same{access.HeldOf(perms...)} }

type same struct{ held access.Held }

func (s same) Held(context.Context, int64) (access.Held, error) { return s.held, nil }
