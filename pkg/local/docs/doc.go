// Package docs keeps the repository's documentation (README.md and docs/)
// and the Makefile's help from drifting unseen: its tests fail on a broken
// relative link or #anchor, on a `make <target>` the Makefile lacks, on a
// target without its one `## target: text` line or missing from `make
// help`, on a layout that names a package that does not exist or leaves
// a product package out, and on a number, default, port or duration the
// docs state that differs from the code's, or that no test checks.
package docs
