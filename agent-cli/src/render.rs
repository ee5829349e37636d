//! What the command prints while a run goes on.
//!
//! - Text (default): the answer streams to stdout; when stderr is a
//!   terminal, tool activity goes there (a spinner line while calls run,
//!   then one line per call with its duration and status); warnings and
//!   errors always go to stderr.
//! - Events (`--events`): every event as one JSON line on stdout.
//! - Quiet (`--quiet`): only the final text, at the end.
//! - Output (`--output-schema`, unless `--events`): only the validated JSON
//!   value, on one line at the end; tool activity as in text mode.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use loopwright::{AgentEvent, AgentResult};

use crate::escape;

/// How often the spinner line is redrawn.
pub const SPINNER_TICK: Duration = Duration::from_millis(100);

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The output mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Streamed text and tool activity.
    Text,
    /// JSON lines.
    Events,
    /// Final text only.
    Quiet,
    /// The validated structured answer only, as one JSON line.
    Output,
}

/// Prints events as they come.
pub struct Renderer {
    mode: Mode,
    /// Tool activity on stderr (text mode with a terminal on stderr).
    activity: bool,
    running: BTreeMap<String, (String, Instant)>,
    status_shown: bool,
    frame: usize,
    /// Whether stdout got text that did not end with a newline.
    open_line: bool,
    wrote_text: bool,
    /// A new step began after text that did not end its line: its first
    /// text starts on a new line, so steps' texts do not run together.
    break_before_text: bool,
    /// Show a proposed plan on stderr (`--plan`, unless the terminal
    /// approver shows it with its question).
    show_plan: bool,
    /// Whether stdout is a terminal: the answer's control characters are
    /// then escaped ([`escape::text`]); a pipe gets the text as it is.
    stdout_terminal: bool,
}

impl Renderer {
    /// A renderer for `mode`.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            activity: matches!(mode, Mode::Text | Mode::Output) && std::io::stderr().is_terminal(),
            running: BTreeMap::new(),
            status_shown: false,
            frame: 0,
            open_line: false,
            wrote_text: false,
            break_before_text: false,
            show_plan: true,
            stdout_terminal: std::io::stdout().is_terminal(),
        }
    }

    /// Whether a proposed plan is shown on stderr.
    pub fn show_plan(mut self, on: bool) -> Self {
        self.show_plan = on;
        self
    }

    /// Whether the spinner needs ticks.
    pub fn spinning(&self) -> bool {
        self.activity && !self.running.is_empty()
    }

    /// Print one event.
    pub fn event(&mut self, event: &AgentEvent) {
        if self.mode == Mode::Events {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        match event {
            AgentEvent::StepStarted { .. } => self.break_before_text = self.open_line,
            AgentEvent::TextDelta { text } if self.mode == Mode::Text => {
                self.clear_status();
                let mut out = std::io::stdout().lock();
                if self.break_before_text && !text.is_empty() {
                    let _ = out.write_all(b"\n");
                    self.break_before_text = false;
                }
                if self.stdout_terminal {
                    let _ = out.write_all(escape::text(text).as_bytes());
                } else {
                    let _ = out.write_all(text.as_bytes());
                }
                let _ = out.flush();
                if !text.is_empty() {
                    self.open_line = !text.ends_with('\n');
                    self.wrote_text = true;
                }
            }
            AgentEvent::ToolCall { call_id, tool, .. } => {
                self.tool_call(call_id.clone(), escape::line(tool).into_owned());
            }
            AgentEvent::ToolResult {
                call_id,
                tool,
                is_error,
                output,
                duration_ms,
            } => self.tool_result(call_id, &escape::line(tool), *is_error, output, *duration_ms),
            AgentEvent::Warning { message } => {
                self.line_to_stderr(&format!("warning: {}", escape::message(message)));
            }
            AgentEvent::ModelFallback { from, to, error } => {
                let (from, to, error) = (escape::line(from), escape::line(to), escape::message(error));
                self.line_to_stderr(&format!("model {from} failed ({error}); trying {to}"));
            }
            AgentEvent::PlanProposed { plan, .. } if self.show_plan => {
                self.line_to_stderr(&format!("plan:\n{}", escape::plan(plan).trim_end()));
            }
            AgentEvent::PlanResolved {
                approved: true,
                edited,
                ..
            } => self.line_to_stderr(if *edited {
                "plan edited and approved"
            } else {
                "plan approved"
            }),
            AgentEvent::Finished {
                error: Some(error), ..
            } => self.line_to_stderr(&format!("error: {}", escape::message(error))),
            AgentEvent::SubAgent { path, event } => self.sub_agent(&escape::line(path), event),
            _ => {}
        }
    }

    /// A sub-agent's activity on stderr, named by its path (its text is
    /// its caller's tool result, not the answer).
    fn sub_agent(&mut self, path: &str, event: &AgentEvent) {
        match event {
            AgentEvent::ToolCall { call_id, tool, .. } => {
                self.tool_call(
                    format!("{path}/{call_id}"),
                    format!("{path}: {}", escape::line(tool)),
                );
            }
            AgentEvent::ToolResult {
                call_id,
                tool,
                is_error,
                output,
                duration_ms,
            } => self.tool_result(
                &format!("{path}/{call_id}"),
                &format!("{path}: {}", escape::line(tool)),
                *is_error,
                output,
                *duration_ms,
            ),
            AgentEvent::Warning { message } => {
                self.line_to_stderr(&format!("warning: {path}: {}", escape::message(message)));
            }
            AgentEvent::ModelFallback { from, to, error } => {
                let (from, to, error) = (escape::line(from), escape::line(to), escape::message(error));
                self.line_to_stderr(&format!("{path}: model {from} failed ({error}); trying {to}"));
            }
            AgentEvent::Finished {
                error: Some(error), ..
            } => self.line_to_stderr(&format!("{path}: error: {}", escape::message(error))),
            _ => {}
        }
    }

    /// A call began: it joins the spinner line under `label`.
    fn tool_call(&mut self, key: String, label: String) {
        self.running.insert(key, (label, Instant::now()));
        self.tick();
    }

    /// A call ended: a line on stderr (its error's first line, if any).
    fn tool_result(
        &mut self,
        key: &str,
        label: &str,
        is_error: bool,
        output: &[loopwright::ToolOutputPart],
        duration_ms: u64,
    ) {
        self.running.remove(key);
        if self.activity {
            self.clear_status();
            let mark = if is_error { '✗' } else { '✓' };
            let detail = if is_error {
                let text = loopwright::ToolOutput::new(output.to_vec()).as_text();
                format!(": {}", escape::line(first_line(&text)))
            } else {
                String::new()
            };
            self.line_to_stderr(&format!("{mark} {label} {duration_ms} ms{detail}"));
            self.tick();
        }
    }

    /// Redraw the spinner line.
    pub fn tick(&mut self) {
        if !self.activity {
            return;
        }
        if crate::approve::PROMPTING.load(std::sync::atomic::Ordering::SeqCst) {
            // The question cleared the line and owns it until answered.
            self.status_shown = false;
            return;
        }
        if self.running.is_empty() {
            self.clear_status();
            return;
        }
        self.frame = (self.frame + 1) % SPINNER.len();
        let calls: Vec<String> = self
            .running
            .values()
            .map(|(tool, start)| format!("{tool} {:.1}s", start.elapsed().as_secs_f64()))
            .collect();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{} {}", SPINNER[self.frame], calls.join(", "));
        let _ = err.flush();
        self.status_shown = true;
    }

    /// Remove the spinner line (before something else is printed).
    pub fn clear_status(&mut self) {
        if self.status_shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.status_shown = false;
        }
    }

    /// One line on stderr, on a line of its own.
    pub fn line_to_stderr(&mut self, line: &str) {
        self.clear_status();
        if self.open_line && std::io::stdout().is_terminal() && std::io::stderr().is_terminal() {
            // Same terminal: finish the answer's line first.
            println!();
            self.open_line = false;
        }
        eprintln!("{line}");
    }

    /// The run is over: end the answer's line, or print the final text in
    /// quiet mode, or the structured answer (one JSON line) in output mode.
    pub fn finish(&mut self, result: &AgentResult) {
        self.clear_status();
        let final_text = result.text.as_str();
        match self.mode {
            Mode::Quiet if !final_text.is_empty() => {
                let final_text = final_text.trim_end_matches('\n');
                if self.stdout_terminal {
                    println!("{}", escape::text(final_text));
                } else {
                    println!("{final_text}");
                }
            }
            Mode::Text if self.wrote_text && self.open_line => println!(),
            Mode::Output => {
                if let Some(line) = result.output.as_ref().and_then(|v| serde_json::to_string(v).ok()) {
                    println!("{line}");
                }
            }
            _ => {}
        }
        let _ = std::io::stdout().flush();
    }
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((cut, _)) => &line[..cut],
        None => line,
    }
}
