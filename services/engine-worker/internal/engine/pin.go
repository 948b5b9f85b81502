package engine

// Pin is the release of an agent CLI an adapter was checked against (its
// protocol, its golden transcripts, the conformance suite) and how that
// release installs. Each adapter exports its own, beside the code that
// speaks the protocol, and the worker's engines table is assembled from
// them: an upgrade is a change of one adapter.
type Pin struct {
	// Packages are installed together with npm, each at its exact version.
	Packages []Package
	// Version is the engine version the packages provide; VersionArgs must
	// print it (on stdout or stderr) as the first word that starts with a
	// digit.
	Version     string
	VersionArgs []string
	// Bin is the executable, relative to the install directory.
	Bin string
}

// Package is an npm package at an exact version.
type Package struct {
	Name    string
	Version string
}

// NPMPin is the pin of one npm package, at pkgVersion, that provides
// version and whose executable bin prints it for --version.
func NPMPin(pkg, pkgVersion, version, bin string) Pin {
	return Pin{Packages: []Package{{Name: pkg, Version: pkgVersion}}, Version: version,
		VersionArgs: []string{"--version"}, Bin: bin}
}
