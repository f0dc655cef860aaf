package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// built is what a build wrote and how a user refers to it.
type built struct {
	Ref      name.Tag // the tag docker load and kind load give the image
	Digest   v1.Hash  // the manifest's digest: the registry's after crane push
	ConfigID v1.Hash  // the config's digest: 'docker images --digests' IMAGE ID
}

// buildImage assembles the image from no base at all (empty.Image: nothing
// is pulled) and one layer, with a config written out in full so that no
// field depends on the machine or the time of the build.
func buildImage(locklabFile, shellFile string) (v1.Image, error) {
	locklab, arch, err := staticBinary("--locklab", locklabFile)
	if err != nil {
		return nil, err
	}
	shell, shellArch, err := staticBinary("--shell", shellFile)
	if err != nil {
		return nil, err
	}
	if shellArch != arch {
		return nil, fmt.Errorf("--shell %s is built for %s but --locklab %s for %s: both must run on the same machine", shellFile, shellArch, locklabFile, arch)
	}
	layerBytes, err := layerTar(locklab, shell)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: epoch}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "locklab-image (scripts/build-image.sh): static locklab and busybox, no base image",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = arch, "linux", created
	// The entrypoint is the CLI, so 'docker run IMAGE explore ...' runs a
	// sweep and the bare image prints the command list; the Indexed Job
	// replaces both with its own command (a pod's command overrides the
	// entrypoint, its args the cmd).
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + locklabPath},
		Cmd:        []string{"list"},
		Env:        []string{"PATH=" + imagePATH},
		WorkingDir: "/tmp",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "locklab",
			"org.opencontainers.image.description": "deterministic fault-injection lab for distributed locks; see docs/sweeps.md",
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// writeImage writes img as a docker-save tarball (what docker load, kind
// load image-archive and crane push read) tagged ref. The file appears
// only once complete: it is written beside its final name and renamed.
func writeImage(path string, ref name.Tag, img v1.Image) (built, error) {
	var b built
	var err error
	b.Ref = ref
	if b.Digest, err = img.Digest(); err != nil {
		return b, err
	}
	if b.ConfigID, err = img.ConfigName(); err != nil {
		return b, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return b, err
	}
	defer os.Remove(tmp.Name())
	if err := tarball.Write(ref, img, tmp); err != nil {
		tmp.Close()
		return b, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return b, err
	}
	if err := tmp.Close(); err != nil {
		return b, err
	}
	return b, os.Rename(tmp.Name(), path)
}
