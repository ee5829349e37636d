//! The benches of loopwright, a package of their own so that building the
//! facade's examples does not build criterion. Each bench is a file beside
//! this one; BENCHMARKS.md has the commands and the figures, e.g.
//! `cargo bench -p loopwright-benches --bench loop_overhead`.
