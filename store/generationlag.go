package store

import (
	"time"

	"github.com/xfsq/xfsq/store/internal/registry"
)

// GenerationLag is how long a probe of the database's generation is reused.
var GenerationLag = time.Millisecond

func init() { registry.Lag = func() time.Duration { return GenerationLag } }
