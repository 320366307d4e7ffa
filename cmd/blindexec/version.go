package main

import (
	"cmp"
	"runtime/debug"
	"strings"
)

// Set at link time by a release build:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/blindexec
//
// Left empty, both come from the build information Go records.
var version, commit string

// versionLine is what `blindexec --version` prints after the name.
func versionLine() string {
	info, _ := debug.ReadBuildInfo()
	return describeVersion(info, version, commit)
}

// describeVersion is "VERSION (commit REV[, modified], GOVERSION)": the
// link-time values first, then the module version and the VCS stamp of
// info, then "devel" and "unknown" (`go run` stamps no commit).
func describeVersion(info *debug.BuildInfo, ldVersion, ldCommit string) string {
	var modVersion, rev, goVersion string
	modified := false
	if info != nil {
		goVersion = info.GoVersion
		if v := info.Main.Version; v != "(devel)" {
			modVersion = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	rev = cmp.Or(ldCommit, rev)
	if len(rev) > 12 {
		rev = rev[:12]
	}
	parts := []string{"commit " + cmp.Or(rev, "unknown")}
	if modified && ldCommit == "" {
		parts = append(parts, "modified")
	}
	if goVersion != "" {
		parts = append(parts, goVersion)
	}
	return cmp.Or(ldVersion, modVersion, "devel") + " (" + strings.Join(parts, ", ") + ")"
}
