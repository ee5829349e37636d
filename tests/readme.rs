//! README.md's "library in 15 lines" is the facade's compiled documentation
//! example (src/lib.rs), line for line: the README cannot drift from code
//! that builds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The lines of the first fenced block after `heading` in README.md.
fn readme_block(heading: &str) -> Vec<String> {
    let readme = include_str!("../README.md");
    let after = &readme[readme.find(heading).expect("heading")..];
    let body = after.split("```").nth(1).expect("a fenced block");
    body.lines().skip(1).map(str::to_owned).collect()
}

/// The visible lines of the first `no_run` example in src/lib.rs.
fn lib_example() -> Vec<String> {
    include_str!("../src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .skip_while(|l| !l.starts_with("```no_run"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .filter(|l| !l.starts_with("# ") && *l != "#")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_library_example_is_the_compiled_one() {
    let readme = readme_block("## The library in 15 lines");
    let lib = lib_example();
    assert!(lib.len() >= 10, "{lib:?}");
    assert_eq!(readme, lib);
}
