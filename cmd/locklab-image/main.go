// Command locklab-image packs a statically linked locklab binary into a
// container image without a container daemon and without a base image, and
// writes it as a docker-save tarball. scripts/build-image.sh builds the
// binary reproducibly and calls it; docs/sweeps.md says how the image is
// loaded (docker load, kind load image-archive) or pushed (crane push) and
// run by deploy/explore-indexed-job.yaml.
//
// The image is one layer: /usr/local/bin/locklab, and Debian's static
// busybox as /bin/busybox with /bin/sh linked to it, because the Indexed
// Job computes its shard from JOB_COMPLETION_INDEX in a shell. Every
// timestamp is fixed and the entries are written in a fixed order, so the
// same binaries give the same image digest.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

const usage = `Usage: locklab-image --locklab FILE [--shell FILE] [--tag REF] [--out FILE]

Packs a static locklab binary (CGO_ENABLED=0) and a static busybox into a
container image from no base image, and writes it as a tarball that
'docker load -i', 'kind load image-archive' and 'crane push' read. Prints
the image's tag, digest and config digest. Use scripts/build-image.sh,
which builds the binary reproducibly first.

  --locklab FILE  the locklab binary (Linux, statically linked)
  --shell FILE    a static busybox, installed as /bin/sh (default /bin/busybox,
                  from Debian's busybox-static)
  --tag REF       the image reference in the tarball (default locklab:local)
  --out FILE      the tarball to write (default locklab.tar)

Exit status: 0 when written, 1 when writing failed, 2 on bad input.
`

// defaultTag is the reference deploy/explore-indexed-job.yaml and
// deploy/github-actions-explore.yml run. Not "latest": Kubernetes pulls a
// ":latest" image on every start (imagePullPolicy Always), which fails for
// an image that was loaded into the nodes rather than pushed.
const defaultTag = "locklab:local"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// badInput marks an error in the command line (exit status 2).
type badInput struct{ error }

func run(args []string, stdout, stderr io.Writer) int {
	err := build(args, stdout)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "locklab-image:", err)
	var bad badInput
	if errors.As(err, &bad) {
		fmt.Fprintln(stderr, "run 'locklab-image --help' for usage")
		return 2
	}
	return 1
}

func build(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("locklab-image", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprint(stdout, usage) }
	locklab := fs.String("locklab", "", "")
	shell := fs.String("shell", "/bin/busybox", "")
	tag := fs.String("tag", defaultTag, "")
	out := fs.String("out", "locklab.tar", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		return badInput{fmt.Errorf("%v (the flags are --locklab, --shell, --tag and --out)", err)}
	}
	if fs.NArg() > 0 {
		return badInput{fmt.Errorf("unexpected argument %q: every input is a flag (--locklab, --shell, --tag, --out)", fs.Arg(0))}
	}
	if *locklab == "" {
		return badInput{errors.New("--locklab: expected the path of a static locklab binary (scripts/build-image.sh builds one)")}
	}
	// Without a tag the reference would mean ":latest", which a pod pulls
	// on every start (see defaultTag), so the tag must be written out.
	ref, err := name.NewTag(*tag)
	if err == nil && !strings.HasSuffix(*tag, ":"+ref.TagStr()) {
		err = errors.New("no tag")
	}
	if err != nil {
		return badInput{fmt.Errorf("--tag %q: expected an image reference with a tag such as %s or registry.example/team/locklab:v1: %v", *tag, defaultTag, err)}
	}
	img, err := buildImage(*locklab, *shell)
	if err != nil {
		return badInput{err}
	}
	b, err := writeImage(*out, ref, img)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\ntag:    %s\ndigest: %s\nconfig: %s\n", *out, b.Ref.String(), b.Digest, b.ConfigID)
	return nil
}
