//! # loopwright-evals
//!
//! Evals: run an agent over a [`Dataset`] of cases and score its answers
//! against each case's [`Expectation`]s, to see what a prompt or a model
//! change does before it ships.
//!
//! [`run_eval`] runs the cases (times [`EvalOptions::repeat`]) concurrently,
//! at most [`EvalOptions::concurrency`] at once, and returns an
//! [`EvalReport`]: per run the answer, every event and each expectation's
//! verdict with the reason it failed; per case the pass rate and the spread
//! of its score over repeats. Rubric expectations are graded by a judge
//! model of their own ([`EvalOptions::judge`]). With models and tool
//! sources from a `Cassette` (`loopwright_testing::replay`) in replay,
//! an eval runs offline.
//!
//! Invariants: every case is run `repeat` times, whatever the others do (a
//! run that fails is a failed run with its reason, never a missing one);
//! the report lists cases in dataset order and runs in repeat order,
//! however they finished.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use loopwright_core::Agent;
//! use loopwright_evals::{Case, Dataset, EvalOptions, Expectation, run_eval};
//! # let model = Arc::new(loopwright_testing::ScriptedModel::new(vec![loopwright_testing::ScriptedStep::text("Paris")]));
//! let agent = Agent::builder(model).system("Answer with the city only.").build();
//! let dataset = Dataset::new(vec![
//!     Case::new("capital", "Capital of France?").expect(Expectation::contains("Paris")),
//! ]);
//! let report = run_eval(&dataset, &agent, EvalOptions::default()).await.unwrap();
//! assert_eq!(report.pass_rate, 1.0);
//! println!("{}", report.table());
//! # });
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod dataset;
mod expect;
mod judge;
mod report;

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use loopwright_core::{Agent, AgentEvent, AgentResult, ExitReason, LanguageModel, Usage};

pub use dataset::{Case, Dataset, DatasetError, MAX_DATASET_BYTES};
pub use expect::{Expectation, RunView, ToolCallView, ToolExpectation};
pub use judge::JUDGE_SYSTEM;
pub use report::{CaseReport, EvalReport, ExpectationResult, RunReport};

/// Runs in flight at once by default.
pub const DEFAULT_EVAL_CONCURRENCY: usize = 4;

/// Why an [`EvalTarget`] could not give a case its agent: any error (a
/// string converts with `.into()`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What runs a case: the agent for it (for an agent file, built with the
/// case's variables).
///
/// ```
/// use loopwright_evals::{Case, EvalTarget};
/// struct PerCase(loopwright_core::Agent);
/// #[async_trait::async_trait]
/// impl EvalTarget for PerCase {
///     async fn agent(&self, case: &Case) -> Result<loopwright_core::Agent, loopwright_evals::BoxError> {
///         let tone = case.vars.get("TONE").cloned().unwrap_or_default();
///         Ok(self.0.to_builder().system(format!("Answer in a {tone} tone.")).build())
///     }
/// }
/// ```
#[async_trait]
pub trait EvalTarget: Send + Sync {
    /// The agent that runs `case`; `Err` fails the run with that reason.
    async fn agent(&self, case: &Case) -> Result<Agent, BoxError>;
}

#[async_trait]
impl EvalTarget for Agent {
    async fn agent(&self, _case: &Case) -> Result<Agent, BoxError> {
        Ok(self.clone())
    }
}

/// Where an eval is, after each run (for a progress bar).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EvalProgress {
    /// Runs finished.
    pub done: usize,
    /// Runs in all.
    pub total: usize,
    /// Runs that passed so far.
    pub passed: usize,
}

type ProgressFn = Arc<dyn Fn(&EvalProgress) + Send + Sync>;

/// How [`run_eval`] runs.
///
/// ```
/// let options = loopwright_evals::EvalOptions::default().concurrency(8).repeat(5);
/// # let _ = options;
/// ```
#[derive(Clone)]
#[must_use]
pub struct EvalOptions {
    concurrency: usize,
    repeat: u32,
    judge: Option<Arc<dyn LanguageModel>>,
    progress: Option<ProgressFn>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_EVAL_CONCURRENCY,
            repeat: 1,
            judge: None,
            progress: None,
        }
    }
}

impl EvalOptions {
    /// Runs in flight at once (at least 1) [default: 4].
    pub fn concurrency(mut self, runs: usize) -> Self {
        self.concurrency = runs.max(1);
        self
    }

    /// Runs of each case (at least 1) [default: 1].
    pub fn repeat(mut self, times: u32) -> Self {
        self.repeat = times.max(1);
        self
    }

    /// The model that grades rubric expectations.
    pub fn judge(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.judge = Some(model);
        self
    }

    /// Called after each run.
    pub fn on_progress(mut self, f: impl Fn(&EvalProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }
}

/// Why an eval could not start.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use loopwright_evals::{Case, Dataset, EvalOptions, Expectation, run_eval};
/// # let agent = loopwright_core::Agent::builder(std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]))).build();
/// let dataset = Dataset::new(vec![Case::new("tone", "Hi").expect(Expectation::Rubric("Friendly.".into()))]);
/// let err = run_eval(&dataset, &agent, EvalOptions::default()).await.unwrap_err();
/// assert_eq!(err.to_string(), "rubric expectations need a judge model (cases: tone)");
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The dataset has no cases.
    #[error("the dataset has no cases")]
    NoCases,
    /// Rubric expectations but no judge model.
    #[error("rubric expectations need a judge model (cases: {})", cases.join(", "))]
    NoJudge {
        /// The cases with rubrics.
        cases: Vec<String>,
    },
}

/// Run every case of `dataset` (see the module docs).
pub async fn run_eval(
    dataset: &Dataset,
    target: &dyn EvalTarget,
    options: EvalOptions,
) -> Result<EvalReport, EvalError> {
    if dataset.cases.is_empty() {
        return Err(EvalError::NoCases);
    }
    if options.judge.is_none() {
        let cases: Vec<String> = dataset
            .cases
            .iter()
            .filter(|c| c.needs_judge())
            .map(|c| c.name.clone())
            .collect();
        if !cases.is_empty() {
            return Err(EvalError::NoJudge { cases });
        }
    }
    let repeat = options.repeat;
    let jobs: Vec<(usize, u32)> = (0..dataset.cases.len())
        .flat_map(|i| (1..=repeat).map(move |r| (i, r)))
        .collect();
    let total = jobs.len();
    let judge = options.judge.clone();
    let mut runs = futures::stream::iter(jobs)
        .map(|(i, r)| {
            let judge = judge.clone();
            async move { (i, run_case(&dataset.cases[i], r, target, judge).await) }
        })
        .buffer_unordered(options.concurrency);
    let mut by_case: Vec<Vec<RunReport>> = vec![Vec::new(); dataset.cases.len()];
    let mut progress = EvalProgress {
        done: 0,
        total,
        passed: 0,
    };
    while let Some((i, run)) = runs.next().await {
        progress.done += 1;
        progress.passed += usize::from(run.passed);
        if let Some(f) = &options.progress {
            f(&progress);
        }
        by_case[i].push(run);
    }
    let cases = dataset
        .cases
        .iter()
        .zip(by_case)
        .map(|(case, mut runs)| {
            runs.sort_by_key(|r| r.repeat);
            CaseReport::new(case.name.clone(), runs)
        })
        .collect();
    Ok(EvalReport::new(cases, repeat))
}

/// One run of `case`, checked.
async fn run_case(
    case: &Case,
    repeat: u32,
    target: &dyn EvalTarget,
    judge: Option<Arc<dyn LanguageModel>>,
) -> RunReport {
    let agent = match target.agent(case).await {
        Ok(agent) => agent,
        Err(e) => return not_run(case, repeat, format!("the agent could not be built: {e}")),
    };
    let messages = case.messages();
    let mut run = agent.run(messages.clone());
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        events.push(event);
    }
    let result = match run.await.or_else(loopwright_core::RunError::into_result) {
        Ok(result) => result,
        Err(e) => return not_run(case, repeat, format!("the run stopped without a result: {e}")),
    };
    let view = RunView::new(
        result.text.clone(),
        result.output.clone(),
        result.steps.len() as u32,
        RunView::calls_in(&events),
    );
    let mut verdicts = Vec::with_capacity(case.expectations.len());
    for expectation in &case.expectations {
        let verdict = match (expectation, &judge) {
            (Expectation::Rubric(rubric), Some(model)) => {
                match judge::judge(model.clone(), &messages, &result.text, rubric).await {
                    Ok(v) => (v.pass, Some(v.reason)),
                    Err(why) => (false, Some(why)),
                }
            }
            _ => match expectation.check(&view) {
                Ok(()) => (true, None),
                Err(why) => (false, Some(why)),
            },
        };
        verdicts.push(ExpectationResult {
            expectation: expectation.describe(),
            passed: verdict.0,
            reason: verdict.1,
        });
    }
    finish(repeat, &result, events, verdicts)
}

/// Whether a run that ended so gave an answer to check.
fn answered(exit: ExitReason) -> bool {
    matches!(
        exit,
        ExitReason::Completed | ExitReason::Stopped | ExitReason::MaxSteps
    )
}

fn finish(
    repeat: u32,
    result: &AgentResult,
    events: Vec<AgentEvent>,
    expectations: Vec<ExpectationResult>,
) -> RunReport {
    let error = (!answered(result.exit())).then(|| {
        let exit = serde_json::to_value(result.exit())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        match &result.outcome {
            loopwright_core::Outcome::ModelFailed { error } => format!(
                "the run ended with {exit}: {}",
                loopwright_core::util::error_chain(error)
            ),
            _ => format!("the run ended with {exit}"),
        }
    });
    let held = expectations.iter().filter(|e| e.passed).count();
    let score = if expectations.is_empty() {
        1.0
    } else {
        held as f64 / expectations.len() as f64
    };
    RunReport {
        repeat,
        passed: error.is_none() && held == expectations.len(),
        score,
        exit: Some(result.exit()),
        text: result.text.clone(),
        output: result.output.clone(),
        steps: result.steps.len() as u32,
        usage: result.tree_usage,
        error,
        expectations,
        events: events
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
    }
}

/// A run that could not be made: every expectation fails with `why`.
fn not_run(case: &Case, repeat: u32, why: String) -> RunReport {
    RunReport {
        repeat,
        passed: false,
        score: 0.0,
        exit: None,
        text: String::new(),
        output: None,
        steps: 0,
        usage: Usage::default(),
        expectations: case
            .expectations
            .iter()
            .map(|e| ExpectationResult {
                expectation: e.describe(),
                passed: false,
                reason: Some("not checked: the case did not run".into()),
            })
            .collect(),
        error: Some(why),
        events: Vec::new(),
    }
}
