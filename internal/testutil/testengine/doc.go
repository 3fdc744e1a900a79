// Package testengine builds the engines that end-to-end tests of several
// packages share: on the real clock, with short retries.
package testengine
