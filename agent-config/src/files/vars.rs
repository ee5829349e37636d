//! Prompt variables: `${NAME}` in an agent file's body.
//!
//! Invariant: every `${NAME}` is either replaced (the caller's variables
//! first, then the built-ins) or left exactly as written with a warning
//! naming it; nothing becomes silently empty. A `$` not followed by `{` is
//! text.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The variables of a body: `${DATE}` (local date, `2026-11-23`),
/// `${DATETIME}` (RFC 3339 in the local zone), `${CWD}`, `${OS}`,
/// `${MAX_STEPS}`, and the caller's, which win over built-ins of the same
/// name.
///
/// ```
/// let vars = loopwright_config::files::PromptVars::new().max_steps(8).var("TEAM", "search");
/// let (text, warnings) = vars.expand("${TEAM}: ${MAX_STEPS} steps, ${NOPE}, $HOME", "a.md");
/// assert_eq!(text, "search: 8 steps, ${NOPE}, $HOME");
/// assert_eq!(warnings, ["a.md: unknown prompt variable ${NOPE} left as is"]);
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct PromptVars {
    vars: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    max_steps: Option<u32>,
}

impl PromptVars {
    /// No caller variables; `${CWD}` is the process's directory and
    /// `${MAX_STEPS}` unknown until set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A variable of the caller's.
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// `${CWD}`.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// `${MAX_STEPS}`.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = Some(steps);
        self
    }

    fn builtin(&self, name: &str) -> Option<String> {
        let now = || chrono::Local::now();
        match name {
            "DATE" => Some(now().format("%Y-%m-%d").to_string()),
            "DATETIME" => Some(now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)),
            "CWD" => self
                .cwd
                .clone()
                .or_else(|| std::env::current_dir().ok())
                .map(|d| d.display().to_string()),
            "OS" => Some(std::env::consts::OS.to_owned()),
            "MAX_STEPS" => self.max_steps.map(|n| n.to_string()),
            _ => None,
        }
    }

    /// `text` with its variables replaced, and a warning (naming `origin`)
    /// for each unknown one, left as is.
    pub fn expand(&self, text: &str, origin: &str) -> (String, Vec<String>) {
        let mut out = String::with_capacity(text.len());
        let mut warnings = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let name = &after[..end];
            let value = self.vars.get(name).cloned().or_else(|| self.builtin(name));
            match value {
                Some(value) => out.push_str(&value),
                None => {
                    let written = format!("${{{name}}}");
                    let warning = format!("{origin}: unknown prompt variable {written} left as is");
                    if !warnings.contains(&warning) {
                        warnings.push(warning);
                    }
                    out.push_str(&written);
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        (out, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_are_replaced() {
        let vars = PromptVars::new().cwd("/work/x").max_steps(4);
        let (text, warnings) = vars.expand("${DATE}|${DATETIME}|${CWD}|${OS}|${MAX_STEPS}", "a.md");
        assert!(warnings.is_empty(), "{warnings:?}");
        let parts: Vec<&str> = text.split('|').collect();
        let date = parts[0];
        assert_eq!(date.len(), 10);
        assert_eq!(date.as_bytes()[4], b'-');
        assert!(
            parts[1].starts_with(date) && parts[1].contains('T'),
            "{}",
            parts[1]
        );
        // RFC 3339 with the local offset.
        let zone = &parts[1][19..];
        assert!(
            zone == "Z" || zone.starts_with('+') || zone.starts_with('-'),
            "{}",
            parts[1]
        );
        assert_eq!(&parts[2..], ["/work/x", std::env::consts::OS, "4"]);
    }

    #[test]
    fn caller_variables_win_and_unknown_ones_stay_with_a_warning() {
        let vars = PromptVars::new().var("OS", "plan9").var("TEAM", "a");
        let (text, warnings) = vars.expand("${OS} ${TEAM} ${X} ${X} ${MAX_STEPS} $5 ${unclosed", "f.md");
        assert_eq!(text, "plan9 a ${X} ${X} ${MAX_STEPS} $5 ${unclosed");
        assert_eq!(
            warnings,
            [
                "f.md: unknown prompt variable ${X} left as is",
                "f.md: unknown prompt variable ${MAX_STEPS} left as is"
            ]
        );
    }
}
