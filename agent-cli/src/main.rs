//! `loopwright`: run an LLM agent with MCP tools from the shell.
//!
//! A thin layer over loopwright: the configuration file is
//! `loopwright::config`, the loop is `loopwright::Agent`; this crate only
//! parses the command line, prints and asks on the terminal.

mod approve;
mod args;
mod attach;
mod dev;
mod escape;
mod eval;
mod exit;
mod files;
mod job;
mod mcp;
mod model;
mod persist;
mod render;
mod resume;
mod serve;
mod settings;
mod tools;
mod trace;

use std::io::{IsTerminal, Read};

use clap::Parser;
use futures::StreamExt;
use loopwright::Agent;
use loopwright::config::AgentConfig;
use loopwright::testing::replay::Cassette;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::args::{ApproveMode, Args};
use crate::exit::Failure;
use crate::render::{Mode, Renderer};
use crate::settings::{load_config, system_prompt};

fn main() {
    let cli = args::Cli::parse();
    let status = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => {
            let status = match cli.command {
                None => runtime.block_on(run(cli.run)),
                Some(args::Command::Serve(args)) => runtime.block_on(serve::run(*args)),
                Some(args::Command::Dev(args)) => runtime.block_on(dev::run(*args)),
                Some(args::Command::Eval(args)) => runtime.block_on(eval::run(*args)),
                Some(args::Command::Mcp(args)) => runtime.block_on(mcp::run(args)),
                Some(args::Command::Resume(args)) => runtime.block_on(resume::run(args)),
            };
            // Do not wait for blocking threads: a terminal question may
            // still be reading /dev/tty after an interrupt.
            runtime.shutdown_background();
            // Off the runtime: the exporter's flush blocks.
            trace::shutdown();
            status
        }
        Err(e) => {
            eprintln!("loopwright: cannot start the async runtime: {e}");
            exit::USAGE
        }
    };
    std::process::exit(i32::from(status));
}

async fn run(args: Args) -> u8 {
    match run_checked(args, None).await {
        Ok(status) => status,
        Err(failure) => {
            eprintln!("loopwright: {}", escape::message(&failure.message));
            failure.status
        }
    }
}

/// The prompt: the argument, or standard input for `-` or when there is no
/// argument and standard input is not a terminal.
fn read_prompt(args: &Args) -> Result<Option<String>, Failure> {
    let from_stdin = match args.prompt.as_deref() {
        Some("-") => true,
        Some(text) => return Ok(Some(text.to_string())),
        None => !std::io::stdin().is_terminal(),
    };
    if !from_stdin {
        return Ok(None);
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| Failure::usage(format!("reading the prompt from standard input: {e}")))?;
    Ok(Some(text))
}

/// Ctrl-C and SIGTERM, listened to from the start, so an interrupt while
/// servers connect or a model is chosen also ends cleanly.
struct Stop {
    interrupt: Signal,
    terminate: Signal,
}

impl Stop {
    fn new() -> Result<Self, Failure> {
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| Failure::usage(format!("cannot handle {name}: {e}")))
        };
        Ok(Self {
            interrupt: listen(SignalKind::interrupt(), "Ctrl-C")?,
            terminate: listen(SignalKind::terminate(), "SIGTERM")?,
        })
    }

    /// The exit status of the next interrupt or termination request.
    async fn requested(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => exit::INTERRUPTED,
            _ = self.terminate.recv() => exit::TERMINATED,
        }
    }
}

/// Run the command line `args`: its prompt, or `resumed` (a paused run to
/// continue, built with the command line it was started with).
pub(crate) async fn run_checked(args: Args, resumed: Option<job::ResumeJob>) -> Result<u8, Failure> {
    let config = load_config(&args)?;
    trace::init(trace::TraceOptions::of(&args), config.secret_values());
    let what = match resumed {
        Some(resumed) => job::What::Resume(Box::new(resumed)),
        None => {
            // `--list-tools` takes no prompt, so it never waits on standard input.
            let prompt = if args.list_tools {
                None
            } else {
                read_prompt(&args)?
            };
            if !args.list_tools && prompt.as_deref().is_none_or(|p| p.trim().is_empty()) {
                return Err(Failure::usage(
                    "no prompt: give it as the argument, or on standard input with `-` (see --help)",
                ));
            }
            // `--file`s join the prompt's message (not read for --list-tools).
            let message = match prompt {
                Some(prompt) if !args.list_tools => attach::prompt_message(prompt, &args.files)?,
                _ => loopwright::Message::user(""),
            };
            job::What::Prompt(message)
        }
    };
    let job = job::Job {
        what,
        store_url: persist::store_url(args.store.as_deref(), config.store.as_deref()).ok(),
    };
    if args.approve == ApproveMode::Ask && !args.list_tools && !approve::terminal_available() {
        return Err(Failure::usage(
            "--approve ask needs a terminal to ask on; use auto or deny",
        ));
    }
    let cassette = args.cassette.open().map_err(Failure::usage)?;
    // From here on Ctrl-C ends the run cleanly (before, while a prompt is
    // typed on the terminal, it simply ends the process: nothing runs yet).
    let mut stop = Stop::new()?;
    let system = system_prompt(&args)?;
    if args.agent.len() > 1 {
        return Err(Failure::usage(
            "--agent names one file here (several are for `loopwright serve`)",
        ));
    }
    if let Some(file) = args.agent.first() {
        return files::run(&args, file, &config, system, job, cassette, &mut stop).await;
    }

    // Interrupted while connecting: dropping the connections ends the
    // servers already started (their process groups are killed on drop).
    let tools = tokio::select! {
        tools = tools::build(&args, &config, cassette.as_ref()) => tools?,
        status = stop.requested() => return Ok(status),
    };
    let status = drive(&args, &config, system, job, &tools, cassette.as_ref(), &mut stop).await;
    release_stdout();
    // Every path ends here: the servers (and their process groups) are
    // closed, gracefully unless another signal comes; then dropping them
    // kills their groups at once.
    tokio::select! {
        () = tools.connected.close_all() => {}
        _ = stop.requested() => {}
    }
    status
}

/// List the tools, or choose the model (through the cassette, if any) and
/// run the job to the end.
async fn drive(
    args: &Args,
    config: &AgentConfig,
    system: Option<String>,
    job: job::Job,
    tools: &tools::Tools,
    cassette: Option<&Cassette>,
    stop: &mut Stop,
) -> Result<u8, Failure> {
    if args.list_tools {
        return Ok(tokio::select! {
            () = tools::list(&tools.set) => exit::OK,
            status = stop.requested() => status,
        });
    }
    let chosen = tokio::select! {
        chosen = model::choose(&args.model, config, args.llm_timeout) => chosen,
        status = stop.requested() => return Ok(status),
    };
    let chosen = match chosen {
        Ok(chosen) => chosen,
        Err(failure) => {
            // Still useful: what the MCP half offers.
            eprintln!("{}", tools::summary(tools).await);
            return Err(failure);
        }
    };
    let options = settings::options(args, args.plan, config, system, &chosen)?;
    let model = match cassette {
        Some(cassette) => cassette.model(chosen.model.clone()),
        None => chosen.model.clone(),
    };
    let agent = Agent::builder(model)
        .shared_tools(tools.set.clone())
        .options(options)
        .build();
    run_prompt(args, &agent, job, stop).await
}

/// Run the job to the end, printing as the flags say, then store what it
/// left; the exit status says how it ended.
async fn run_prompt(args: &Args, agent: &Agent, job: job::Job, stop: &mut Stop) -> Result<u8, Failure> {
    let mode = if args.events {
        Mode::Events
    } else if agent.options().output.is_some() {
        Mode::Output
    } else if args.quiet {
        Mode::Quiet
    } else {
        Mode::Text
    };
    // `--approve ask` shows the plan with its question on the terminal.
    let mut renderer = Renderer::new(mode).show_plan(args.approve != ApproveMode::Ask);
    let mut ticker = tokio::time::interval(render::SPINNER_TICK);
    let mut stopped_by: Option<u8> = None;
    let job::Started { mut run, after } = job.start(args, agent).await?;
    loop {
        tokio::select! {
            event = run.next() => match event {
                Some(event) => {
                    if let Some((request, responder)) = approve::input_request(&event) {
                        approve::answer_on_terminal(request.clone(), responder.clone());
                    }
                    renderer.event(&event);
                }
                None => break,
            },
            _ = ticker.tick(), if renderer.spinning() => renderer.tick(),
            status = stop.requested() => match stopped_by {
                // First request: cancel the run and let it finish cleanly.
                None => {
                    stopped_by = Some(status);
                    run.cancel();
                }
                // Second: stop waiting (dropping the run cancels what is left).
                Some(first) => return Ok(first),
            },
        }
    }
    // However it ended: the exit status says how.
    let result = run
        .await
        .or_else(loopwright::RunError::into_result)
        .map_err(|_| Failure::usage("the run stopped without a result"))?;
    renderer.finish(&result);
    if stopped_by.is_none()
        && let Some(why) = exit::explain(&result)
    {
        renderer.line_to_stderr(&escape::message(&why));
    }
    after.finish(&result).await;
    Ok(stopped_by.unwrap_or_else(|| exit::for_result(&result)))
}

/// The output is complete: flush standard output and close it (it then
/// points at /dev/null), so a pipe reader sees the end at once instead of
/// waiting while the MCP servers shut down. Errors still go to stderr.
fn release_stdout() {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
}
