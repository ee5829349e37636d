//! The command line as clap parses it: what each subcommand's help offers,
//! and the combinations and values it refuses (clap's errors end the
//! process with status 2, help with 0, as [`clap::Error::exit`] does).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use super::*;

/// `loopwright ARGS`, parsed as the binary parses it (a prompt run).
pub(crate) fn parse(args: &[&str]) -> Args {
    let cli = Cli::try_parse_from(std::iter::once("loopwright").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(cli.command.is_none(), "{args:?} is a subcommand");
    cli.run
}

/// The error clap ends `loopwright ARGS` with.
fn refused(args: &[&str]) -> clap::Error {
    match Cli::try_parse_from(std::iter::once("loopwright").chain(args.iter().copied())) {
        Ok(cli) => panic!("{args:?} was accepted: {cli:?}"),
        Err(e) => e,
    }
}

/// The help `loopwright ARGS` prints, at the width of output that is not
/// a terminal (clap's 100 columns), with its exit status.
fn help(args: &[&str]) -> (String, i32) {
    let mut command = Cli::command().term_width(100);
    let error = command
        .try_get_matches_from_mut(std::iter::once("loopwright").chain(args.iter().copied()))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::DisplayHelp, "{args:?}");
    assert!(!error.use_stderr(), "help goes to stdout");
    (error.render().to_string(), error.exit_code())
}

#[test]
fn help_names_serve_and_serve_help_offers_only_what_serve_takes() {
    let (stdout, status) = help(&["--help"]);
    assert_eq!(status, 0);
    assert!(
        stdout.contains("Usage: loopwright [OPTIONS] [PROMPT]"),
        "{stdout}"
    );
    // clap aligns the command column to the longest name.
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("serve ") && l.contains(" Serve agents to other programs")),
        "{stdout}"
    );
    let (stdout, status) = help(&["serve", "--help"]);
    assert_eq!(status, 0);
    assert!(stdout.contains("Usage: loopwright serve [OPTIONS]"), "{stdout}");
    for shared in [
        "--openai <ADDR>",
        "--mcp-stdio",
        "--allow-host <HOST>",
        "--model <PROVIDER/MODEL>",
    ] {
        assert!(stdout.contains(shared), "{shared} missing: {stdout}");
    }
    for run_only in ["[PROMPT]", "--events", "--quiet", "--list-tools", "--plan"] {
        assert!(!stdout.contains(run_only), "{run_only} offered: {stdout}");
    }
}

#[test]
fn an_unknown_reasoning_effort_is_a_usage_error_naming_the_flag() {
    let error = refused(&["--reasoning", "extreme", "hi"]);
    assert_eq!(error.kind(), ErrorKind::ValueValidation);
    assert_eq!(error.exit_code(), 2);
    let message = error.to_string();
    assert!(
        message.contains("unknown reasoning effort `extreme`") && message.contains("--reasoning"),
        "{message}"
    );
}

#[test]
fn flags_that_contradict_each_other_are_usage_errors_naming_both() {
    for (args, flags) in [
        (
            &["--system", "a", "--system-file", "b", "hi"][..],
            ["--system", "--system-file"],
        ),
        (
            &["--parallel-tool-calls", "--no-parallel-tool-calls", "hi"],
            ["--parallel-tool-calls", "--no-parallel-tool-calls"],
        ),
        (&["--events", "--quiet", "hi"], ["--events", "--quiet"]),
        (&["--mcp", "a", "--no-mcp", "hi"], ["--mcp", "--no-mcp"]),
        (
            &["--skills", "d", "--no-skills", "hi"],
            ["--skills", "--no-skills"],
        ),
    ] {
        let error = refused(args);
        assert_eq!(error.kind(), ErrorKind::ArgumentConflict, "{args:?}");
        assert_eq!(error.exit_code(), 2);
        let message = error.to_string();
        for flag in flags {
            assert!(message.contains(flag), "{flag} not named: {message}");
        }
    }
}

#[test]
fn the_parallel_tool_calls_choice_is_kept_only_when_made() {
    assert_eq!(parse(&["hi"]).parallel_tool_calls(), None);
    assert_eq!(
        parse(&["--parallel-tool-calls", "hi"]).parallel_tool_calls(),
        Some(true)
    );
    assert_eq!(
        parse(&["--no-parallel-tool-calls", "hi"]).parallel_tool_calls(),
        Some(false)
    );
}
