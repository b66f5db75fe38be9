// Package workflows holds durawait's deterministic Temporal workflows and the
// domain types of each wait.
//
// Raw tool arguments are parsed once, here, into invariant-bearing types
// (see ParseWaitFor); everything downstream of the parser may rely on those
// invariants. Nothing in this package performs I/O or reads a clock outside
// the Temporal SDK, so it is safe to import from workflow code.
package workflows
