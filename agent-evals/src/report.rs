//! What an eval found: per run the answer, the events and each
//! expectation's verdict with its reason; per case the pass rate and its
//! spread over repeats; overall the pass rate. Serialises to JSON for CI;
//! [`EvalReport::table`] is the terminal's view.
//!
//! Invariant: a run passes only when every expectation passed; rates are
//! fractions of runs, never of expectations.

use loopwright_core::{ExitReason, Usage};
use serde::Serialize;
use serde_json::Value;

/// One expectation's verdict.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ExpectationResult {
    /// The expectation in words (`contains "Paris"`).
    pub expectation: String,
    /// Whether it held.
    pub passed: bool,
    /// Why it failed (for a rubric, the judge's reason either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One run of a case.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RunReport {
    /// 1-based repeat number.
    pub repeat: u32,
    /// Whether every expectation held.
    pub passed: bool,
    /// The fraction of expectations that held.
    pub score: f64,
    /// How the run ended (`None` when the agent could not be built).
    pub exit: Option<ExitReason>,
    /// The answer text.
    pub text: String,
    /// The structured output, for an agent with an output schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Model calls made.
    pub steps: u32,
    /// Tokens used (the run's tree).
    pub usage: Usage,
    /// Why the run failed to run (an agent that could not be built, a
    /// model error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every expectation's verdict, in the case's order.
    pub expectations: Vec<ExpectationResult>,
    /// Every event of the run, as the `--events` lines show them.
    pub events: Vec<Value>,
}

impl RunReport {
    /// The reasons of the failed expectations (and the run's error).
    pub fn failures(&self) -> Vec<String> {
        self.error
            .iter()
            .cloned()
            .chain(
                self.expectations
                    .iter()
                    .filter(|e| !e.passed)
                    .map(|e| format!("{}: {}", e.expectation, e.reason.as_deref().unwrap_or("failed"))),
            )
            .collect()
    }
}

/// A case's runs.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Runs that passed / runs.
    pub pass_rate: f64,
    /// The mean of the runs' scores.
    pub mean_score: f64,
    /// The standard deviation of the runs' scores (0 for one run): how
    /// much repeats disagree.
    pub score_stddev: f64,
    /// The runs, by repeat.
    pub runs: Vec<RunReport>,
}

impl CaseReport {
    pub(crate) fn new(name: String, runs: Vec<RunReport>) -> Self {
        let n = runs.len().max(1) as f64;
        let passed = runs.iter().filter(|r| r.passed).count() as f64;
        let mean = runs.iter().map(|r| r.score).sum::<f64>() / n;
        let variance = runs.iter().map(|r| (r.score - mean).powi(2)).sum::<f64>() / n;
        Self {
            name,
            pass_rate: passed / n,
            mean_score: mean,
            score_stddev: variance.sqrt(),
            runs,
        }
    }
}

/// The outcome of an eval.
///
/// ```
/// let report = loopwright_evals::EvalReport::default();
/// assert_eq!(report.pass_rate, 0.0);
/// assert!(!report.passes(0.5));
/// ```
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct EvalReport {
    /// Runs that passed / runs, over every case and repeat.
    pub pass_rate: f64,
    /// Runs made.
    pub runs: usize,
    /// Runs that passed.
    pub passed: usize,
    /// Repeats per case.
    pub repeat: u32,
    /// Tokens used by every run (the judge's not included).
    pub usage: Usage,
    /// The cases, in dataset order.
    pub cases: Vec<CaseReport>,
}

impl EvalReport {
    pub(crate) fn new(cases: Vec<CaseReport>, repeat: u32) -> Self {
        let runs = cases.iter().map(|c| c.runs.len()).sum();
        let passed = cases.iter().flat_map(|c| &c.runs).filter(|r| r.passed).count();
        let usage = cases
            .iter()
            .flat_map(|c| &c.runs)
            .fold(Usage::default(), |u, r| u + r.usage);
        Self {
            pass_rate: if runs == 0 {
                0.0
            } else {
                passed as f64 / runs as f64
            },
            runs,
            passed,
            repeat,
            usage,
            cases,
        }
    }

    /// Whether the pass rate is at least `min` (a fraction, 0 to 1).
    pub fn passes(&self, min: f64) -> bool {
        self.runs > 0 && self.pass_rate + f64::EPSILON >= min
    }

    /// The report as a table for a terminal: one row per case (its pass
    /// rate, and with repeats its score's mean and spread), then the
    /// reasons of each failed run, then the totals.
    ///
    /// ```
    /// assert!(loopwright_evals::EvalReport::default().table().ends_with("0/0 runs passed (0%)\n"));
    /// ```
    pub fn table(&self) -> String {
        let name_width = self
            .cases
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0)
            .max("case".len());
        let mut out = String::new();
        let repeats = self.repeat > 1;
        if !self.cases.is_empty() {
            out.push_str(&format!("{:<name_width$}  result  passed", "case"));
            if repeats {
                out.push_str("  score (mean ± sd)");
            }
            out.push_str("  steps\n");
        }
        for case in &self.cases {
            let passed = case.runs.iter().filter(|r| r.passed).count();
            let verdict = if passed == case.runs.len() {
                "pass"
            } else if passed == 0 {
                "FAIL"
            } else {
                "flaky"
            };
            let steps: Vec<String> = case.runs.iter().map(|r| r.steps.to_string()).collect();
            out.push_str(&format!(
                "{:<name_width$}  {verdict:<6}  {:<6}",
                case.name,
                format!("{passed}/{}", case.runs.len())
            ));
            if repeats {
                out.push_str(&format!(
                    "  {:<17}",
                    format!("{:.2} ± {:.2}", case.mean_score, case.score_stddev)
                ));
            }
            out.push_str(&format!("  {}\n", steps.join(",")));
        }
        for case in &self.cases {
            for run in case.runs.iter().filter(|r| !r.passed) {
                let which = if repeats {
                    format!("{} (run {})", case.name, run.repeat)
                } else {
                    case.name.clone()
                };
                out.push_str(&format!("\n{which}:\n"));
                for reason in run.failures() {
                    out.push_str(&format!("  - {reason}\n"));
                }
            }
        }
        out.push_str(&format!(
            "\n{}/{} runs passed ({:.0}%)\n",
            self.passed,
            self.runs,
            self.pass_rate * 100.0
        ));
        out
    }
}
