//! From the command line to the agent's settings: the parsed flags
//! ([`AgentArgs`]) and the loaded configuration give the system prompt,
//! the approvals, the output spec, the accounting sink and the run's
//! [`AgentOptions`], as plain functions (no process, no model server), so
//! each flag can be checked where it lands (the tests in
//! `settings/tests.rs`).
//!
//! Invariant: the configuration's `defaults` come first and every flag
//! given wins over them; a flag not given leaves the default alone
//! (`--no-compaction` and `--no-tool-search` put theirs back to off).

use std::sync::Arc;

use loopwright::config::{AgentConfig, ChosenModel, SchemaSource};
use loopwright::{Approvals, accounting::JsonlSink, agent::AgentOptions};

use crate::approve;
use crate::args::{AgentArgs, ApproveMode};
use crate::exit::Failure;

/// The system prompt with `--coding-tools` when none is given.
pub(crate) const CODING_SYSTEM: &str = "You are a careful coding agent working in a workspace directory. Look before you \
change anything: use Glob, Grep and Read to find your way, Edit for small changes, Write for new files, and Bash to \
run tests. Keep going until the task is done, then say briefly what you changed and how you checked it.";

/// The configuration `--config` names, else the default location's;
/// its warnings go to stderr.
pub(crate) fn load_config(args: &AgentArgs) -> Result<AgentConfig, Failure> {
    let config = match &args.config {
        Some(path) => AgentConfig::load(path),
        None => AgentConfig::from_default_location(),
    }
    .map_err(|e| Failure::usage(format!("config {e}")))?;
    for warning in &config.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(config)
}

/// The system prompt the flags give: `--system`, `--system-file`, the
/// coding prompt with `--coding-tools`, none for agent files (their body).
pub(crate) fn system_prompt(args: &AgentArgs) -> Result<Option<String>, Failure> {
    Ok(match (&args.system, &args.system_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(file)) => Some(
            loopwright::textfile::read_text_file(file)
                .map_err(|e| Failure::usage(format!("--system-file {}: {e}", file.display())))?,
        ),
        // An agent file's body is its system prompt.
        (None, None) if !args.agent.is_empty() => None,
        (None, None) => args.coding_tools.then(|| CODING_SYSTEM.to_string()),
    })
}

/// How tool calls that need approval are answered, per `--approve`.
pub(crate) fn approvals(args: &AgentArgs) -> Option<Approvals> {
    match args.approve {
        ApproveMode::Auto => None,
        ApproveMode::Ask => Some(Approvals::with_approver(approve::TerminalApprover::default())),
        ApproveMode::Deny => Some(Approvals::with_approver(approve::DenyAll)),
        ApproveMode::Defer => Some(Approvals::defer()),
    }
}

/// The output spec `--output-schema` asks for, in `--output-mode`.
pub(crate) fn output_spec(
    args: &AgentArgs,
    source: Option<SchemaSource>,
) -> Result<Option<loopwright::OutputSpec>, Failure> {
    Ok(source
        .map(|s| s.load().map_err(|e| Failure::usage(format!("output schema {e}"))))
        .transpose()?
        .map(|spec| spec.mode(args.output_mode.into())))
}

/// The accounting sink `--accounting` asks for.
pub(crate) fn accounting_sink(args: &AgentArgs) -> Result<Option<Arc<JsonlSink>>, Failure> {
    args.accounting
        .as_ref()
        .map(|file| {
            JsonlSink::open(file)
                .map(Arc::new)
                .map_err(|e| Failure::usage(format!("accounting file {}: {e}", file.display())))
        })
        .transpose()
}

/// The command line's run settings (all but approvals, which the callers
/// set for every agent), applied over what the configuration set: each
/// flag given sets its option, `--no-compaction` and `--no-tool-search`
/// put theirs back to off.
#[derive(Clone)]
pub(crate) struct CommandLine {
    system: Option<String>,
    max_steps: Option<u32>,
    max_depth: Option<u32>,
    max_model_calls: Option<u64>,
    max_tree_tokens: Option<u64>,
    timeout: Option<std::time::Duration>,
    tool_timeout: Option<std::time::Duration>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    max_output_tokens: Option<u32>,
    no_compaction: bool,
    no_tool_search: bool,
    parallel_tool_calls: Option<bool>,
    sink: Option<Arc<JsonlSink>>,
    reasoning: Option<loopwright::ReasoningEffort>,
    output: Option<loopwright::OutputSpec>,
    preflight: Option<loopwright::preflight::Preflight>,
    guardrails: Vec<crate::args::GuardrailArg>,
    guardrail_checkpoint: Option<loopwright::guardrail::Checkpoint>,
    trace_content: bool,
}

/// The environment variable the OpenTelemetry GenAI instrumentations read
/// to put message content in spans.
const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether spans carry the conversation: `--otel` with `--otel-content`
/// or the conventions' environment variable set to `true`.
fn trace_content(args: &AgentArgs) -> bool {
    let env = std::env::var(CAPTURE_CONTENT_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    args.otel && (args.otel_content || env)
}

impl CommandLine {
    pub(crate) fn of(
        args: &AgentArgs,
        plan: bool,
        system: Option<String>,
        sink: Option<Arc<JsonlSink>>,
        output: Option<loopwright::OutputSpec>,
    ) -> Self {
        Self {
            system,
            max_steps: args.max_steps,
            max_depth: args.max_depth,
            max_model_calls: args.max_model_calls,
            max_tree_tokens: args.max_tree_tokens,
            timeout: args.timeout,
            tool_timeout: args.tool_timeout,
            temperature: args.temperature,
            top_p: args.top_p,
            max_output_tokens: args.max_output_tokens,
            no_compaction: args.no_compaction,
            no_tool_search: args.no_tool_search,
            parallel_tool_calls: args.parallel_tool_calls(),
            sink,
            reasoning: args.reasoning,
            output,
            preflight: plan.then(|| approve::preflight(args.approve)),
            guardrails: args.guardrails.clone(),
            guardrail_checkpoint: args.guardrail_checkpoint,
            trace_content: trace_content(args),
        }
    }

    pub(crate) fn apply(&self, options: &mut AgentOptions) {
        fn set<T: Clone>(field: &mut Option<T>, flag: &Option<T>) {
            if flag.is_some() {
                field.clone_from(flag);
            }
        }
        set(&mut options.system, &self.system);
        if let Some(n) = self.max_steps {
            options.max_steps = n.max(1);
        }
        if let Some(n) = self.max_depth {
            options.max_depth = n;
        }
        set(&mut options.max_model_calls, &self.max_model_calls);
        set(&mut options.max_tree_tokens, &self.max_tree_tokens);
        set(&mut options.run_timeout, &self.timeout);
        if let Some(t) = self.tool_timeout {
            options.tool_timeout = t;
        }
        set(&mut options.temperature, &self.temperature);
        set(&mut options.top_p, &self.top_p);
        set(&mut options.max_output_tokens, &self.max_output_tokens);
        if self.no_compaction {
            options.compaction = None;
        }
        if self.no_tool_search {
            options.tool_search = None;
        }
        if let Some(on) = self.parallel_tool_calls {
            options.parallel_tool_calls = on;
        }
        if let Some(sink) = &self.sink {
            options.accounting = Some(sink.clone());
        }
        if let Some(effort) = self.reasoning {
            options.reasoning = Some(effort.into());
        }
        set(&mut options.output, &self.output);
        set(&mut options.preflight, &self.preflight);
        options.trace_content |= self.trace_content;
        self.apply_guardrails(options);
    }

    /// `--guardrail`s added to the configured guardrails, and the
    /// `--guardrail-checkpoint`.
    fn apply_guardrails(&self, options: &mut AgentOptions) {
        if self.guardrails.is_empty() && self.guardrail_checkpoint.is_none() {
            return;
        }
        let mut rails = options
            .guardrails
            .take()
            .map(|r| (*r).clone())
            .unwrap_or_default();
        for guard in &self.guardrails {
            rails = rails.guard_arc(guard.0.clone());
        }
        if let Some(checkpoint) = self.guardrail_checkpoint {
            rails = rails.checkpoint(checkpoint);
        }
        options.guardrails = (!rails.is_empty()).then(|| Arc::new(rails));
    }
}

/// The run's options: the config's defaults, then the command line, then
/// the accounting file and the context budget (the library's order).
pub(crate) fn options(
    args: &AgentArgs,
    plan: bool,
    config: &AgentConfig,
    system: Option<String>,
    chosen: &ChosenModel,
) -> Result<AgentOptions, Failure> {
    // --output-schema, else defaults.outputSchema.
    let source = match &args.output_schema {
        Some(file) => Some(SchemaSource::File(file.clone())),
        None => config.defaults.output_schema.clone(),
    };
    let output = output_spec(args, source)?;
    let sink = accounting_sink(args)?;
    let approvals = approvals(args);
    let command_line = CommandLine::of(args, plan, system, sink, output);
    let command_line = |mut options: AgentOptions| {
        command_line.apply(&mut options);
        if approvals.is_some() {
            options.approvals = approvals;
        }
        options
    };
    config
        .agent_options(chosen, command_line)
        .map_err(|e| Failure::usage(e.to_string()))
}

#[cfg(test)]
pub(crate) mod tests;
