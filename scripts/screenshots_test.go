package scripts_test

import (
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// The README's pictures are remade by one command from a real xfsq serve
// and a real terminal's capture of xfsq report: the script makes both PNGs
// with the size of a page and of a report, and the committed ones are
// PNGs of the same kind.
func TestScreenshotsScriptMakesThePictures(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		prereq.Missing(t, "the screenshots need Chromium: apt-get install chromium")
		return
	}
	out := t.TempDir()
	if b, err := exec.Command("./screenshots.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("screenshots.sh: %v\n%s", err, b)
	}
	for _, dir := range []string{out, "../docs/screenshots"} {
		for name, least := range map[string][2]int{"dashboard.png": {1000, 600}, "report.png": {700, 250}, "dashboard-hosts.png": {1000, 200}, "dashboard-host.png": {1000, 300}} {
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width < least[0] || cfg.Height < least[1] {
				t.Errorf("%s/%s: %dx%d (%v), want a PNG of at least %dx%d", dir, name, cfg.Width, cfg.Height, err, least[0], least[1])
			}
		}
	}
}
