package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"time"
)

// epoch is every timestamp in the image: the layer's entries, the config's
// created time and its history. A fixed time is what makes two builds of the
// same commit byte-identical (the reproducible-builds convention of
// SOURCE_DATE_EPOCH=0; a registry shows the image as created in 1970).
var epoch = time.Unix(0, 0).UTC()

// Paths inside the image. The Indexed Job (deploy/explore-indexed-job.yaml)
// runs its command as ["/bin/sh", "-c", ...], so the image has /bin/sh; the
// binary sits on the PATH that the image's config sets.
const (
	locklabPath = "usr/local/bin/locklab"
	shellPath   = "bin/busybox"
	shLink      = "bin/sh"
	imagePATH   = "/usr/local/bin:/bin"
)

// staticBinary reads an executable and checks that it can run in an image
// with nothing else in it: a Linux ELF file with no program interpreter (a
// dynamically linked binary names ld.so in PT_INTERP and would fail to start
// with "no such file or directory"). It returns the file's bytes and its
// architecture in the image config's spelling (GOARCH).
func staticBinary(role, path string) ([]byte, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", role, err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: expected a Linux ELF executable: %v", role, path, err)
	}
	defer f.Close()
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return nil, "", fmt.Errorf("%s %s: expected a Linux executable, found OS ABI %v", role, path, f.OSABI)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, "", fmt.Errorf("%s %s: expected a statically linked executable, found a dynamically linked one (build locklab with CGO_ENABLED=0; for the shell install Debian's busybox-static, not busybox)", role, path)
		}
	}
	arch, ok := map[elf.Machine]string{
		elf.EM_X86_64:  "amd64",
		elf.EM_AARCH64: "arm64",
		elf.EM_386:     "386",
		elf.EM_ARM:     "arm",
		elf.EM_RISCV:   "riscv64",
		elf.EM_PPC64:   "ppc64le",
		elf.EM_S390:    "s390x",
	}[f.Machine]
	if !ok {
		return nil, "", fmt.Errorf("%s %s: unsupported machine %v", role, path, f.Machine)
	}
	return data, arch, nil
}

// layerTar writes the image's only layer as an uncompressed tar: the
// directories, busybox as the shell with /bin/sh a link to it (busybox picks
// its applet from the name it is run by), and the locklab binary. Entries
// come in a fixed order with fixed owners, modes and times, so the same two
// binaries always give the same bytes.
func layerTar(locklab, shell []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}
	}
	entries := []struct {
		hdr  *tar.Header
		data []byte
	}{
		{dir("bin", 0o755), nil},
		{&tar.Header{Typeflag: tar.TypeReg, Name: shellPath, Mode: 0o755}, shell},
		{&tar.Header{Typeflag: tar.TypeSymlink, Name: shLink, Linkname: "busybox", Mode: 0o777}, nil},
		{dir("tmp", 0o1777), nil},
		{dir("usr", 0o755), nil},
		{dir("usr/local", 0o755), nil},
		{dir("usr/local/bin", 0o755), nil},
		{&tar.Header{Typeflag: tar.TypeReg, Name: locklabPath, Mode: 0o755}, locklab},
	}
	for _, e := range entries {
		h := e.hdr
		h.Size = int64(len(e.data))
		h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = epoch, 0, 0, "root", "root"
		h.Format = tar.FormatUSTAR
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
