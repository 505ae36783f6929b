// Package docs keeps the repository's documentation (README.md and docs/)
// from drifting unseen: its tests fail on a broken relative link or
// #anchor, on a `make <target>` the Makefile lacks, and on a layout that
// names a package that does not exist or leaves a product package out.
package docs
