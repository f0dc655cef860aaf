package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// needBusybox returns the static busybox the image's shell comes from, or
// skips: locally when it is not installed, never under CI=true (.ci/run
// installs it through scripts/install-busybox.sh).
func needBusybox(t *testing.T) string {
	t.Helper()
	const path = "/bin/busybox"
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing under CI=true: scripts/install-busybox.sh should have installed busybox-static", path)
		}
		t.Skipf("%s not installed (apt-get install busybox-static, or bash scripts/install-busybox.sh)", path)
	}
	return path
}

var digestLine = regexp.MustCompile(`(?m)^digest: (sha256:[0-9a-f]{64})$`)

// buildWithScript runs the documented command, scripts/build-image.sh, and
// returns the digest it printed.
func buildWithScript(t *testing.T, out string) string {
	t.Helper()
	cmd := exec.Command("bash", "../../scripts/build-image.sh", out)
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build-image.sh %s: %v\n%s", out, err, output)
	}
	m := digestLine.FindSubmatch(output)
	if m == nil {
		t.Fatalf("scripts/build-image.sh printed no digest line:\n%s", output)
	}
	return string(m[1])
}

// The acceptance: the documented command builds the image twice
// with the same digest, and the tarball holds an image whose entrypoint is
// the locklab binary, which runs ('locklab list') once extracted from the
// layer, also through the image's /bin/sh and PATH as the Indexed Job runs
// it. It compiles the static binary (a build configuration of its own: a
// cold cache costs about two CPU minutes), once per run of the suite; the
// second build is the cache's and a link.
func TestImageReproducibleAndRuns(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds the static locklab binary; CI runs it")
	}
	needBusybox(t)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a", "locklab.tar"), filepath.Join(dir, "b", "locklab.tar")
	for _, p := range []string{first, second} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d1, d2 := buildWithScript(t, first), buildWithScript(t, second)
	if d1 != d2 {
		t.Fatalf("two builds of one commit printed digests %s and %s", d1, d2)
	}
	b1, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("two builds of one commit wrote different tarballs (%d and %d bytes) with digest %s", len(b1), len(b2), d1)
	}

	tag, err := name.NewTag(defaultTag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(first, &tag)
	if err != nil {
		t.Fatalf("the tarball holds no image tagged %s: %v", defaultTag, err)
	}
	// What crane push would push: the manifest rebuilt from the tarball
	// has the digest the script printed.
	if got, err := img.Digest(); err != nil || got.String() != d1 {
		t.Fatalf("the tarball's image has digest %v (%v); the script printed %s", got, err, d1)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/local/bin/locklab"}) || !slices.Equal(cfg.Config.Cmd, []string{"list"}) {
		t.Errorf("entrypoint %q cmd %q; want [/usr/local/bin/locklab] [list]", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if !slices.Contains(cfg.Config.Env, "PATH=/usr/local/bin:/bin") {
		t.Errorf("env %q lacks PATH=/usr/local/bin:/bin", cfg.Config.Env)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !cfg.Created.Time.Equal(epoch) {
		t.Errorf("config os %q arch %q created %v; want linux %s %v", cfg.OS, cfg.Architecture, cfg.Created.Time, runtime.GOARCH, epoch)
	}
	root := filepath.Join(dir, "rootfs")
	extractImage(t, img, root)

	list := exec.Command(filepath.Join(root, "usr/local/bin/locklab"), "list")
	out, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "redlock") {
		t.Fatalf("locklab list from the image: %v\n%s", err, out)
	}
	// The Job's way in: /bin/sh -c with the image's PATH finds locklab.
	sh := exec.Command(filepath.Join(root, "bin/sh"), "-c", `locklab list | head -n 3; echo "exit=$?"`)
	sh.Env = []string{"PATH=" + filepath.Join(root, "usr/local/bin") + ":" + filepath.Join(root, "bin")}
	out, err = sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "exit=0") {
		t.Fatalf("the image's /bin/sh running locklab: %v\n%s", err, out)
	}
}

// extractImage unpacks the image's only layer under root, checking that it
// holds what the config refers to: the binary, busybox and the /bin/sh link.
func extractImage(t *testing.T, img v1.Image, root string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("the image has %d layers (%v); want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v owner %d:%d; want the epoch and root", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		target := filepath.Join(root, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, target)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(target, data, os.FileMode(h.Mode).Perm())
			}
		default:
			t.Fatalf("%s: unexpected entry type %q", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"bin/", "bin/busybox", "bin/sh", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/locklab"}
	if !slices.Equal(names, want) {
		t.Fatalf("layer entries %q; want %q", names, want)
	}
	if link, err := os.Readlink(filepath.Join(root, "bin/sh")); err != nil || link != "busybox" {
		t.Fatalf("/bin/sh links to %q (%v); want busybox", link, err)
	}
}

// Bad input is refused with exit status 2 and a message naming the flag
// and what was expected; nothing is written.
func TestImageBadInput(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.tar")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--locklab: expected the path of a static locklab binary"},
		{[]string{"--locklab", notELF}, "expected a Linux ELF executable"},
		{[]string{"--locklab", filepath.Join(dir, "missing")}, "--locklab: open"},
		{[]string{"--locklab", "/bin/ls"}, "expected a statically linked executable, found a dynamically linked one"},
		{[]string{"--locklab", notELF, "--tag", "locklab"}, `--tag "locklab": expected an image reference with a tag`},
		{[]string{"--locklab", notELF, "--tag", "Locklab:x"}, `--tag "Locklab:x": expected an image reference`},
		{[]string{"--locklab", notELF, "extra"}, `unexpected argument "extra"`},
		{[]string{"--lockab", notELF}, "flag provided but not defined: -lockab (the flags are --locklab,"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append(c.args, "--out", out), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input left %s behind (%v)", out, err)
	}
}

// The manifest, the workflow and the guide name the image exactly as the
// build writes it (issue 40): the script, the tarball, the tag this
// command gives by default, and the command that loads it; none names the
// ":latest" image nothing builds.
func TestDeployFilesNameTheBuiltImage(t *testing.T) {
	for _, c := range []struct {
		file string
		want []string
	}{
		{"../../deploy/explore-indexed-job.yaml", []string{
			"bash scripts/build-image.sh", "image: " + defaultTag, "kind load image-archive locklab.tar",
			"docker load -i locklab.tar", "crane push locklab.tar ", "imagePullPolicy: IfNotPresent",
		}},
		{"../../deploy/github-actions-explore.yml", []string{
			"bash scripts/build-image.sh locklab.tar", "path: locklab.tar", "docker load -i locklab.tar",
			"docker run --rm -v \"$PWD:/work\" -w /work " + defaultTag + " \\\n            explore redlock",
			"docker run --rm -v \"$PWD:/work\" -w /work " + defaultTag + " \\\n            merge shards/shard-*.json",
		}},
		{"../../docs/sweeps.md", []string{
			"bash scripts/build-image.sh", defaultTag, "kind load image-archive locklab.tar",
			"docker load -i locklab.tar", "crane push locklab.tar ",
		}},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s does not name %q", c.file, w)
			}
		}
		if strings.Contains(text, "locklab:latest") {
			t.Errorf("%s names locklab:latest, which nothing builds", c.file)
		}
	}
}
