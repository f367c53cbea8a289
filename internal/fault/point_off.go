//go:build !xfsqfault

package fault

// Armed reports whether Point can kill: built with Tag.
const Armed = false

// Point does nothing: this build was made without Tag.
func Point(string) {}
