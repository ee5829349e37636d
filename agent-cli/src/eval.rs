//! `loopwright eval DATASET`: the agent (`--agent FILE`, else the
//! configuration and flags' agent) run over the dataset's cases by
//! `loopwright::eval::run_eval`; a progress bar on stderr when it is a
//! terminal, the table on stdout, the whole report as JSON with `--json`,
//! and the exit status from `--min-pass`.
//!
//! An agent file is built once per distinct set of case variables (they
//! are its prompt variables), its MCP servers connected once for all of
//! them; every model (the judge's too) and server goes through the
//! cassette of `--record` / `--replay`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

use loopwright::Agent;
use loopwright::config::AgentConfig;
use loopwright::eval::{Case, Dataset, EvalOptions, EvalProgress, EvalReport, EvalTarget, run_eval};
use loopwright::files::{AgentFile, BuildOptions, McpServerPool};
use loopwright::testing::replay::Cassette;
use tokio::sync::OnceCell;

use crate::args::{ApproveMode, EvalArgs};
use crate::exit::{self, Failure};
use crate::settings::{load_config, system_prompt};
use crate::{Stop, trace};

/// The exit status when the pass rate is below `--min-pass`.
pub const BELOW_MIN_PASS: u8 = 1;

/// Width of the progress bar, in cells.
const BAR_CELLS: usize = 30;

/// Run the eval; the exit status says how it went.
pub async fn run(args: EvalArgs) -> u8 {
    match run_checked(args).await {
        Ok(status) => status,
        Err(failure) => {
            eprintln!("loopwright eval: {}", failure.message);
            failure.status
        }
    }
}

async fn run_checked(args: EvalArgs) -> Result<u8, Failure> {
    let run = &args.run;
    let config = load_config(run)?;
    trace::init(trace::TraceOptions::of(run), config.secret_values());
    if run.approve == ApproveMode::Ask {
        return Err(Failure::usage(
            "--approve ask: an eval runs unattended; use auto or deny",
        ));
    }
    if run.agent.len() > 1 {
        return Err(Failure::usage("--agent names one file here"));
    }
    let dataset = Dataset::load(&args.dataset).map_err(|e| Failure::usage(format!("dataset {e}")))?;
    let cassette = args.cassette.open().map_err(Failure::usage)?;
    let mut stop = Stop::new()?;
    let judge = tokio::select! {
        judge = judge(&args, &dataset, &config, cassette.as_ref()) => judge?,
        status = stop.requested() => return Ok(status),
    };
    let target = tokio::select! {
        target = Target::new(&args, &config, cassette) => target?,
        status = stop.requested() => return Ok(status),
    };
    let mut options = EvalOptions::default()
        .concurrency(usize::try_from(args.concurrency).unwrap_or(usize::MAX))
        .repeat(args.repeat);
    if let Some(judge) = judge {
        options = options.judge(judge);
    }
    let bar = std::io::stderr().is_terminal().then(ProgressBar::default);
    if let Some(bar) = &bar {
        let bar = bar.clone();
        bar.draw(0, dataset.cases.len() * args.repeat as usize, 0);
        options = options.on_progress(move |p: &EvalProgress| bar.draw(p.done, p.total, p.passed));
    }
    let outcome = tokio::select! {
        report = run_eval(&dataset, &target, options) => Some(report),
        _ = stop.requested() => None,
    };
    if bar.is_some() {
        ProgressBar::clear();
    }
    target.close().await;
    let report = match outcome {
        None => return Ok(exit::INTERRUPTED),
        Some(report) => report.map_err(|e| Failure::usage(e.to_string()))?,
    };
    write_report(&args, &report)?;
    Ok(if report.passes(args.min_pass) {
        exit::OK
    } else {
        BELOW_MIN_PASS
    })
}

/// The table on stdout (unless `--json -`), the JSON where `--json` says.
fn write_report(args: &EvalArgs, report: &EvalReport) -> Result<(), Failure> {
    let json = || serde_json::to_string_pretty(report).unwrap_or_default();
    match args.json.as_deref() {
        Some(path) if path.as_os_str() == "-" => println!("{}", json()),
        Some(path) => {
            std::fs::write(path, json() + "\n")
                .map_err(|e| Failure::usage(format!("--json {}: {e}", path.display())))?;
            print!("{}", report.table());
        }
        None => print!("{}", report.table()),
    }
    if report.pass_rate + f64::EPSILON < args.min_pass {
        eprintln!(
            "loopwright eval: pass rate {:.0}% is below --min-pass {:.0}%",
            report.pass_rate * 100.0,
            args.min_pass * 100.0
        );
    }
    Ok(())
}

/// The judge model: `--judge-model`, else the dataset's `judge`; none when
/// no case has a rubric.
async fn judge(
    args: &EvalArgs,
    dataset: &Dataset,
    config: &AgentConfig,
    cassette: Option<&Cassette>,
) -> Result<Option<Arc<dyn loopwright::LanguageModel>>, Failure> {
    let rubrics: Vec<&str> = dataset
        .cases
        .iter()
        .filter(|c| c.needs_judge())
        .map(|c| c.name.as_str())
        .collect();
    if rubrics.is_empty() {
        return Ok(None);
    }
    let Some(selector) = args.judge_model.clone().or_else(|| dataset.judge.clone()) else {
        return Err(Failure::usage(format!(
            "rubric expectations need a judge model: --judge-model provider/model, or `judge` in the dataset (cases: {})",
            rubrics.join(", ")
        )));
    };
    let chosen = config
        .choose_model(std::slice::from_ref(&selector), args.run.llm_timeout)
        .await
        .map_err(|e| Failure::usage(format!("judge model {selector}: {e}")))?;
    Ok(Some(match cassette {
        Some(c) => c.model(chosen.model),
        None => chosen.model,
    }))
}

/// What runs the cases.
enum Target {
    /// The configuration and flags' agent, built once, and its servers.
    Flags(Box<(Agent, loopwright::mcp::Connected)>),
    /// An agent file, built per set of case variables.
    File(Box<FileTarget>),
}

impl Target {
    async fn new(args: &EvalArgs, config: &AgentConfig, cassette: Option<Cassette>) -> Result<Self, Failure> {
        let run = &args.run;
        let system = system_prompt(run)?;
        let skills = crate::tools::skills(run, config);
        if let Some(file) = run.agent.first() {
            let definition = AgentFile::load(file).map_err(|e| Failure::usage(format!("agent file {e}")))?;
            let pool = McpServerPool::new();
            let mut options =
                crate::files::build_options(run, false, system, skills)?.server_pool(pool.clone());
            if let Some(cassette) = cassette {
                options = options.cassette(cassette);
            }
            let target = FileTarget {
                definition,
                config: config.clone(),
                options,
                pool,
                built: Mutex::default(),
                warned: Mutex::default(),
            };
            // Built now for the cases without variables: a file that does
            // not build is a usage error before any run.
            target
                .build(&BTreeMap::new())
                .await
                .map_err(|e| Failure::usage(format!("agent file {e}")))?;
            return Ok(Self::File(Box::new(target)));
        }
        for warning in skills.warnings() {
            eprintln!("warning: {warning}");
        }
        let tools = crate::tools::build_with(run, config, skills, cassette.as_ref()).await?;
        let chosen = crate::model::choose(&run.model, config, run.llm_timeout).await?;
        let options = crate::settings::options(run, false, config, system, &chosen)?;
        let model = match &cassette {
            Some(c) => c.model(chosen.model.clone()),
            None => chosen.model.clone(),
        };
        let agent = Agent::builder(model)
            .shared_tools(tools.set.clone())
            .options(options)
            .build();
        Ok(Self::Flags(Box::new((agent, tools.connected))))
    }

    /// Close the MCP servers.
    async fn close(&self) {
        match self {
            Self::Flags(flags) => flags.1.close_all().await,
            Self::File(file) => file.pool.close_all().await,
        }
    }
}

#[async_trait::async_trait]
impl EvalTarget for Target {
    async fn agent(&self, case: &Case) -> Result<Agent, loopwright::eval::BoxError> {
        match self {
            Self::Flags(flags) => Ok(flags.0.clone()),
            Self::File(file) => Ok(file.build(&case.vars).await?),
        }
    }
}

type Built = Arc<OnceCell<Result<Agent, String>>>;

/// An agent file and its builds, one per set of variables.
struct FileTarget {
    definition: AgentFile,
    config: AgentConfig,
    options: BuildOptions,
    pool: McpServerPool,
    built: Mutex<HashMap<BTreeMap<String, String>, Built>>,
    /// Warnings said already (each is said once).
    warned: Mutex<HashSet<String>>,
}

impl FileTarget {
    async fn build(&self, vars: &BTreeMap<String, String>) -> Result<Agent, String> {
        let cell = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(vars.clone())
            .or_default()
            .clone();
        cell.get_or_init(|| async {
            let options = vars
                .iter()
                .fold(self.options.clone(), |o, (k, v)| o.var(k.clone(), v.clone()));
            let built = self
                .definition
                .build_with(&self.config, options)
                .await
                .map_err(|e| e.to_string())?;
            let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
            for warning in built.warnings {
                if warned.insert(warning.clone()) {
                    eprintln!("warning: {warning}");
                }
            }
            Ok(built.agent)
        })
        .await
        .clone()
    }
}

/// A one-line progress bar on stderr (a terminal).
#[derive(Clone, Default)]
struct ProgressBar;

impl ProgressBar {
    fn draw(&self, done: usize, total: usize, passed: usize) {
        let filled = (done * BAR_CELLS).checked_div(total).unwrap_or(0).min(BAR_CELLS);
        let bar: String = "█".repeat(filled) + &"░".repeat(BAR_CELLS - filled);
        let failed = done.saturating_sub(passed);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{bar} {done}/{total} runs, {passed} passed, {failed} failed"
        );
        let _ = err.flush();
    }

    fn clear() {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}
