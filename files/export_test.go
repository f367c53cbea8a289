package files

// What the external tests (package files_test, which may import package
// sandbox: it imports files) reach of the layer's insides.
const MaxPathBytes = maxPathBytes

var (
	BlockSize   = blockSize
	LockPlacing = lockPlacing
	// Tests set these through the pointer.
	NoTmpfile    = &noTmpfile
	PutCommitted = &putCommitted
	RaceHook     = &raceHook
)
